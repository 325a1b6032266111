package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.handlestore.client.errors.InvalidArgumentException;
import io.github.handlestore.client.testkit.SharedCluster;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The client state store on the shared cluster: what one MCP client process stored, another (its
 * restart, or the same user on another machine) reads through a client of its own; the token is
 * sealed at rest; the keys and encodings are the other clients' layout.
 */
class ClientStateClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  static final String NS = "java-client-state";
  static Client first;
  static Client second;

  @BeforeAll
  static void connect() {
    first = CLUSTER.get().client(NS, b -> {});
    List<String> other = new ArrayList<>(CLUSTER.get().endpoints());
    Collections.rotate(other, -1);
    second = CLUSTER.get().client(NS, b -> b.endpoints(other));
    first.keyRing().blocking().create();
  }

  @AfterAll
  static void close() {
    for (Client c : new Client[] {first, second}) {
      if (c != null) {
        c.close();
      }
    }
  }

  static BlockingClientStateStore store(Client c, String clientKey) {
    return value(ClientStateStore.fromCluster(c, clientKey)).blocking();
  }

  @Test
  void whatOneClientStoredAnotherReads() {
    BlockingClientStateStore a = store(first, "host-a|user-1");
    a.setSessionId("sess-1");
    a.setAccessToken("hunter2");
    a.setProtocolVersion("2026-07-28");
    a.setServerCapabilities(Map.of("tools", Map.of("listChanged", true)));

    BlockingClientStateStore b = store(second, "host-a|user-1");
    assertEquals(Optional.of("sess-1"), b.sessionId());
    assertEquals(Optional.of("hunter2"), b.accessToken());
    assertEquals(Optional.of("2026-07-28"), b.protocolVersion());
    JsonNode caps = b.serverCapabilities(JsonNode.class).orElseThrow();
    assertTrue(caps.get("tools").get("listChanged").booleanValue());

    BlockingClientStateStore someoneElse = store(second, "host-a|user-2");
    assertEquals(Optional.empty(), someoneElse.sessionId());
    assertEquals(Optional.empty(), someoneElse.accessToken());

    b.clearSessionId();
    assertEquals(Optional.empty(), a.sessionId());
    b.clear();
    assertEquals(Optional.empty(), a.accessToken());
    assertEquals(Optional.empty(), a.protocolVersion());
    assertEquals(Optional.empty(), a.serverCapabilities(JsonNode.class));
  }

  @Test
  void theTokenIsSealedAtRestInTheOtherClientsLayout() {
    BlockingClientStateStore a = store(first, "host-b");
    a.setSessionId("sess-2");
    a.setAccessToken("hunter2-secret-token");
    BlockingStateTool tool = first.stateTool().blocking();

    StateEntry raw = tool.retrieve("mcp-clients/host-b/access-token").orElseThrow();
    assertTrue(raw.value().isJson());
    String stored = raw.value().jsonText();
    assertFalse(stored.contains("hunter2"), "the token is stored in the clear: " + stored);
    assertFalse(
        new String(raw.value().wire().toByteArray(), StandardCharsets.UTF_8).contains("hunter2"));
    String blob = tool.get("mcp-clients/host-b/access-token", String.class).orElseThrow();
    assertTrue(blob.startsWith("v1e."), blob);
    // Bound to the client key (subject) and the field (tool), as the other clients seal it.
    RequestStateCodec codec = value(RequestStateCodec.fromCluster(second, SealMode.ENCRYPTED));
    assertEquals(
        Optional.of("hunter2-secret-token"),
        value(codec.open(blob, "host-b", "access-token", String.class)));
    assertEquals(Optional.empty(), value(codec.open(blob, "host-c", "access-token")));
    // The other fields are plain JSON strings.
    assertEquals(
        "\"sess-2\"",
        tool.retrieve("mcp-clients/host-b/session-id").orElseThrow().value().jsonText());
  }

  @Test
  void aTokenWhoseKeyWasRetiredIsGoneAndTheClientSignsInAgain() {
    try (Client own = CLUSTER.get().client("java-client-state-retire", b -> {})) {
      String key = own.keyRing().blocking().create();
      BlockingClientStateStore a = store(own, "host-r");
      a.setAccessToken("old-token");
      own.keyRing().blocking().rotate();
      own.keyRing().blocking().retire(key);
      BlockingClientStateStore later = store(own, "host-r");
      assertEquals(Optional.empty(), later.accessToken());
      later.setAccessToken("new-token");
      assertEquals(Optional.of("new-token"), store(own, "host-r").accessToken());
    }
  }

  @Test
  void plainFieldsAreStoredInTheClearBesideTheOthers() {
    BlockingClientStateStore a = store(first, "host-f");
    a.setField("server-discover", Map.of("ttlMs", 5, "name", "cart"));
    BlockingClientStateStore b = store(second, "host-f");
    JsonNode got = b.field("server-discover", JsonNode.class).orElseThrow();
    assertEquals(5, got.get("ttlMs").intValue());
    String stored =
        first
            .stateTool()
            .blocking()
            .retrieve("mcp-clients/host-f/server-discover")
            .orElseThrow()
            .value()
            .jsonText();
    assertTrue(stored.contains("\"name\":\"cart\""), stored);
    b.clearField("server-discover");
    assertEquals(Optional.empty(), a.field("server-discover", JsonNode.class));
    for (String bad : new String[] {"", "a/b"}) {
      error(InvalidArgumentException.class, a.async().setField(bad, 1));
      error(InvalidArgumentException.class, a.async().field(bad, JsonNode.class));
      error(InvalidArgumentException.class, a.async().openSealed(bad, JsonNode.class));
    }
  }

  @Test
  void openSealedTellsNothingStoredFromSomethingThisRingDoesNotOpen() {
    BlockingClientStateStore mine = store(first, "host-o");
    assertEquals(Optional.empty(), mine.openSealed("oauth-tokens", JsonNode.class));
    mine.setSealed("oauth-tokens", Map.of("access_token", "t-1"));
    assertEquals(
        "t-1",
        store(second, "host-o")
            .openSealed("oauth-tokens", JsonNode.class)
            .orElseThrow()
            .get("access_token")
            .textValue());
    String blob =
        first.stateTool().blocking().get("mcp-clients/host-o/oauth-tokens", String.class).get();
    try (Client other = CLUSTER.get().client("java-client-state-other-ring", b -> {})) {
      other.keyRing().blocking().create();
      other.stateTool().blocking().store("mcp-clients/host-o/oauth-tokens", blob);
      other.stateTool().blocking().store("mcp-clients/host-o/plain", 42);
      BlockingClientStateStore theirs = store(other, "host-o");
      assertEquals(Optional.empty(), theirs.sealed("oauth-tokens", JsonNode.class));
      SealedFieldException refused =
          assertThrows(
              SealedFieldException.class, () -> theirs.openSealed("oauth-tokens", JsonNode.class));
      assertEquals("mcp-clients/host-o/oauth-tokens", refused.key());
      assertTrue(refused.getMessage().contains("key ring does not open it"), refused.getMessage());
      assertThrows(SealedFieldException.class, () -> theirs.openSealed("plain", JsonNode.class));
    }
    // Bound to the field: the same blob under another field is refused too.
    first.stateTool().blocking().store("mcp-clients/host-o/moved", blob);
    assertThrows(SealedFieldException.class, () -> mine.openSealed("moved", JsonNode.class));
  }

  @Test
  void aMalformedClientKeyOrASigningCodecIsRefusedBeforeAnyCall() {
    for (String bad : new String[] {"", "a/b", "x".repeat(129), "tab\there", "é".repeat(65)}) {
      error(InvalidArgumentException.class, ClientStateStore.fromCluster(first, bad));
    }
    RequestStateCodec signing = value(RequestStateCodec.fromCluster(first, SealMode.SIGNED));
    assertThrows(
        InvalidArgumentException.class,
        () -> new ClientStateStore(first.stateTool(), signing, "host-a"));
  }
}
