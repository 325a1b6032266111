package io.github.handlestore.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.RequestStateCodec;
import io.github.handlestore.client.RingKey;
import io.github.handlestore.client.SealMode;
import io.github.handlestore.client.SealOptions;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.SharedCluster;
import io.github.handlestore.mcp.replica.Replica;
import io.modelcontextprotocol.modern.McpException;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.client.McpSyncClient;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The request-state codec across two real replicas (child JVMs of the modern server on Tomcat),
 * each opened, sealed and redeemed through the cluster, and the SDK's own client carrying the blob
 * from one to the other: what one seals the other opens, once (single use on); a replay, a blob of
 * another ring, another principal or tool, an expired or garbled one is refused with the SDK's
 * -32602; a rotation reaches both without a restart.
 */
class RequestStateAcrossReplicasTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  private static final String NS = "mcp-request-state";
  private static final String TOOL = "tools/call:confirm";
  private static Client client;
  private static Replica a;
  private static Replica b;

  @BeforeAll
  static void replicas() {
    Cluster cluster = CLUSTER.get();
    client = cluster.client(NS, c -> {});
    client.keyRing().blocking().create();
    String[] opts = {"--single-use", "true", "--refresh-ms", "1000"};
    a = Replica.start(cluster, NS, "A", opts);
    b = Replica.start(cluster, NS, "B", opts);
  }

  @AfterAll
  static void stop() {
    a.close();
    b.close();
    client.close();
  }

  private static String sealedBy(McpSyncClient c) {
    McpSchema.CallToolOutcome first = c.tool("confirm").callOnce();
    return assertInstanceOf(McpSchema.InputRequiredResult.class, first).requestState();
  }

  private static McpException refused(Supplier<Object> call) {
    McpException e = assertThrows(McpException.class, call::get);
    assertEquals(McpSchema.ErrorCodes.INVALID_PARAMS, e.error().code(), e.getMessage());
    assertEquals("Invalid or expired requestState", e.error().message());
    return e;
  }

  @Test
  void whatOneReplicaSealsTheOtherOpensOnce() {
    McpSyncClient onA = Sdk.client(a.url());
    McpSyncClient onB = Sdk.client(b.url());
    String blob = sealedBy(onA);
    assertTrue(blob.startsWith("v1e."), "encrypted with the ring: " + blob);

    McpSchema.CallToolResult done = onB.tool("confirm").requestState(blob).call();
    assertEquals("opened {\"cart\":\"c-1\",\"sealedBy\":\"A\"} on B", Sdk.text(done));

    // Redeemed in the cluster: refused on the other replica and on the same one.
    refused(() -> onA.tool("confirm").requestState(blob).callOnce());
    refused(() -> onB.tool("confirm").requestState(blob).callOnce());
  }

  @Test
  void aBlobForSomeoneElseOrAnotherToolOrRingIsRefused() {
    String blob = sealedBy(Sdk.client(a.url()));
    refused(() -> Sdk.client(b.url(), "mallory").tool("confirm").requestState(blob).callOnce());

    RequestStateCodec ring = RequestStateCodec.fromCluster(client, SealMode.ENCRYPTED).join();
    String state = "{\"cart\":\"c-9\"}";
    McpSyncClient onB = Sdk.client(b.url());
    // The binding the replicas use: sealed for it with the cluster's ring, it opens ...
    String good = ring.seal(state, "alice", SealOptions.DEFAULT.forTool(TOOL)).join();
    assertEquals(
        "opened " + state + " on B", Sdk.text(onB.tool("confirm").requestState(good).call()));
    // ... for another tool, or under another ring, or expired, it does not.
    String otherTool =
        ring.seal(state, "alice", SealOptions.DEFAULT.forTool("tools/call:x")).join();
    refused(() -> onB.tool("confirm").requestState(otherTool).callOnce());
    byte[] secret = new byte[32];
    new SecureRandom().nextBytes(secret);
    RequestStateCodec other =
        RequestStateCodec.of(
            List.of(RingKey.of("other", true, HexFormat.of().formatHex(secret))),
            SealMode.ENCRYPTED);
    String foreign = other.seal(state, "alice", SealOptions.DEFAULT.forTool(TOOL)).join();
    refused(() -> onB.tool("confirm").requestState(foreign).callOnce());
    long past = Instant.now().getEpochSecond() - 5;
    String expired = ring.sealAt(state, "alice", TOOL, past, null);
    refused(() -> onB.tool("confirm").requestState(expired).callOnce());
  }

  @Test
  void aGarbledBlobIsRefusedWithTheSdksError() {
    McpSyncClient onB = Sdk.client(b.url());
    for (String junk : List.of("garbage", "v1e.", "v1e.AAAA", "v1.e30.AAAA", "v1e.%%%%")) {
      refused(() -> onB.tool("confirm").requestState(junk).callOnce());
    }
  }

  @Test
  void keysRotateAndRetireWithoutARestart() throws Exception {
    McpSyncClient onA = Sdk.client(a.url());
    McpSyncClient onB = Sdk.client(b.url());
    String before1 = sealedBy(onA);
    String before2 = sealedBy(onA);
    String oldKey = primary().id();

    client.keyRing().blocking().rotate();
    RingKey fresh = primary();
    RequestStateCodec onlyNew = RequestStateCodec.of(List.of(fresh), SealMode.ENCRYPTED);
    // A seals with the new primary once it re-read the ring (every second here), no restart.
    String after = null;
    for (Instant end = Instant.now().plusSeconds(20); after == null; ) {
      String blob = sealedBy(onA);
      if (onlyNew.openAt(blob, "alice", TOOL, Instant.now().getEpochSecond()).isPresent()) {
        after = blob;
      } else if (Instant.now().isAfter(end)) {
        throw new AssertionError("replica A never sealed with the rotated-in key");
      } else {
        Thread.sleep(200);
      }
    }
    String sealedAfter = after;
    // B re-reads its ring on a blob no cached key opens, at most once a second (the client's
    // RequestStateCodec): past that second, the new key's blob opens there at once.
    Cluster.sleep(Duration.ofMillis(1100));
    assertTrue(Sdk.text(onB.tool("confirm").requestState(sealedAfter).call()).endsWith("on B"));
    // The old key still opens what it sealed ...
    assertTrue(Sdk.text(onB.tool("confirm").requestState(before1).call()).endsWith("on B"));

    // ... until it is retired: past one refresh interval, no replica opens it.
    client.keyRing().blocking().retire(oldKey);
    Cluster.sleep(Duration.ofMillis(1500));
    refused(() -> onB.tool("confirm").requestState(before2).callOnce());
  }

  private static RingKey primary() {
    return client.keyRing().blocking().list(true).stream()
        .filter(RingKey::primary)
        .findFirst()
        .orElseThrow();
  }
}
