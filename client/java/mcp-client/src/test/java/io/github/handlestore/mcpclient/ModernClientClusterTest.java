package io.github.handlestore.mcpclient;

import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.ClientStateStore;
import io.github.handlestore.client.SealedFieldException;
import io.github.handlestore.client.testkit.SharedCluster;
import io.github.handlestore.mcpclient.testing.McpTestServers;
import io.github.handlestore.mcpclient.testing.TokenEndpoint;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.client.McpClient;
import io.modelcontextprotocol.modern.client.McpSyncClient;
import io.modelcontextprotocol.modern.client.transport.HttpClientMcpTransport;
import io.modelcontextprotocol.modern.client.transport.McpHttpStatusException;
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
 * The SDK's modern client with its token and discover result in the cluster, against the SDK's own
 * server behind a bearer check: a second client of the same user, through other nodes (a restarted
 * process, or another machine), sends the token the first one's sign-in saved and knows the server
 * without a second {@code server/discover}.
 */
class ModernClientClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  static final String NS = "java-mcp-client-modern";
  static Client first;
  static Client second;
  static TokenEndpoint auth;
  static McpTestServers servers;

  @BeforeAll
  static void start() {
    first = CLUSTER.get().client(NS, b -> {});
    List<String> other = new ArrayList<>(CLUSTER.get().endpoints());
    Collections.rotate(other, -1);
    second = CLUSTER.get().client(NS, b -> b.endpoints(other));
    first.keyRing().blocking().create();
    auth = TokenEndpoint.start("mcp-client", "secret", 3600);
    servers = McpTestServers.start(auth::valid);
  }

  @AfterAll
  static void stop() {
    for (AutoCloseable c : new AutoCloseable[] {servers, auth, first, second}) {
      try {
        if (c != null) {
          c.close();
        }
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
  }

  static ClientStateStore store(Client c, String key) {
    return value(ClientStateStore.fromCluster(c, key));
  }

  static McpSyncClient mcp(ClientStateStore store) {
    AccessTokenSource tokens = AccessTokenSource.of(store);
    HttpClientMcpTransport transport =
        HttpClientMcpTransport.builder(servers.modern())
            .requestCustomizer(new BearerTokenCustomizer(tokens))
            .authorizationErrorHandler(new RefusedTokenHandler(tokens))
            .build();
    return McpClient.sync(transport).build();
  }

  static String greet(McpSyncClient client) {
    McpSchema.CallToolResult r = client.tool("greet").arguments(Map.of("name", "ann")).call();
    return ((McpSchema.TextContent) r.content().get(0)).text();
  }

  @Test
  void aSecondProcessUsesTheSavedTokenAndTheKeptServerMetadata() {
    ClientStateStore mine = store(first, "modern|alice");
    mine.blocking().setAccessToken(auth.issue()); // the application's sign-in
    int discovers = servers.count("server/discover");

    McpSyncClient one = mcp(mine);
    McpSchema.DiscoverResult found = new ClusterDiscovery(mine).discover(one);
    assertEquals("hello ann", greet(one));
    assertEquals(discovers + 1, servers.count("server/discover"));

    ClientStateStore again = store(second, "modern|alice");
    McpSyncClient two = mcp(again);
    McpSchema.DiscoverResult kept = new ClusterDiscovery(again).discover(two);
    assertEquals(discovers + 1, servers.count("server/discover"), "asked the server again");
    assertEquals(found.instructions(), kept.instructions());
    assertEquals(found.supportedVersions(), kept.supportedVersions());
    assertTrue(kept.capabilities().tools() != null);
    assertEquals("hello ann", greet(two));
    // The shared fields, as the other clients read them.
    assertEquals(
        Optional.of(McpSchema.LATEST_PROTOCOL_VERSION), again.blocking().protocolVersion());
    assertTrue(again.blocking().serverCapabilities(Map.class).orElseThrow().containsKey("tools"));
  }

  @Test
  void aKeptResultIsUsedWhileFreshAndAskedForAgainOnceStale() {
    ClientStateStore mine = store(first, "modern|stale");
    mine.blocking().setAccessToken(auth.issue());
    int discovers = servers.count("server/discover");
    new ClusterDiscovery(mine).discover(mcp(mine));
    // New clients each time: the SDK's own cache would answer for the first one.
    new ClusterDiscovery(mine).discover(mcp(mine));
    assertEquals(discovers + 1, servers.count("server/discover"), "a fresh result not used");
    java.time.Clock later =
        java.time.Clock.offset(
            java.time.Clock.systemUTC(), java.time.Duration.ofMinutes(11)); // past ttlMs
    new ClusterDiscovery(mine, io.modelcontextprotocol.json.McpJsonDefaults.getMapper(), later)
        .discover(mcp(mine));
    assertEquals(discovers + 2, servers.count("server/discover"), "a stale result used");
  }

  @Test
  void aRefusedTokenIsForgottenForEveryProcessAndTheCallFails() {
    ClientStateStore mine = store(first, "modern|bob");
    String token = auth.issue();
    mine.blocking().setAccessToken(token);
    McpSyncClient one = mcp(mine);
    assertEquals("hello ann", greet(one));
    auth.revoke(token);
    int refused = servers.count(McpTestServers.REFUSED);
    McpHttpStatusException e = assertThrows(McpHttpStatusException.class, () -> greet(one));
    assertEquals(401, e.statusCode());
    assertEquals(refused + 1, servers.count(McpTestServers.REFUSED), "sent again without reason");
    assertEquals(Optional.empty(), store(second, "modern|bob").blocking().accessToken());
  }

  @Test
  void aTokenAnotherRingSealedIsRefusedClearlyAndNeverSent() {
    ClientStateStore mine = store(first, "modern|carol");
    mine.blocking().setAccessToken(auth.issue());
    String blob =
        first
            .stateTool()
            .blocking()
            .get("mcp-clients/modern|carol/access-token", String.class)
            .orElseThrow();
    try (Client other = CLUSTER.get().client(NS + "-other", b -> {})) {
      other.keyRing().blocking().create();
      other.stateTool().blocking().store("mcp-clients/modern|carol/access-token", blob);
      McpSyncClient theirs = mcp(store(other, "modern|carol"));
      int refused = servers.count(McpTestServers.REFUSED);
      RuntimeException e = assertThrows(RuntimeException.class, () -> greet(theirs));
      assertTrue(causedBy(e, SealedFieldException.class), "not refused clearly: " + e);
      assertEquals(refused, servers.count(McpTestServers.REFUSED), "a request went out");
    }
  }

  @Test
  void noStoredTokenSendsNoneAndTheServerRefuses() {
    McpSyncClient nobody = mcp(store(first, "modern|nobody"));
    McpHttpStatusException e = assertThrows(McpHttpStatusException.class, () -> greet(nobody));
    assertEquals(401, e.statusCode());
    assertFalse(value(new ClusterDiscovery(store(first, "modern|nobody")).kept()).isPresent());
  }

  static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return true;
      }
    }
    return false;
  }
}
