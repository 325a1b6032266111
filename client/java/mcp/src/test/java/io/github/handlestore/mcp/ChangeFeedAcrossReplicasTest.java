package io.github.handlestore.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.SharedCluster;
import io.github.handlestore.mcp.replica.Replica;
import io.modelcontextprotocol.modern.client.McpSyncClient;
import io.modelcontextprotocol.modern.client.SubscriptionEvent;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The change feed across two real replicas: the SDK's client listens ({@code subscriptions/listen})
 * on replica B while replica A broadcasts, and hears it; everything broadcast after the
 * acknowledgement arrives, once, in order; a restarted replica serves listens that miss nothing
 * after their acknowledgement; the keys are the other clients' layout.
 */
class ChangeFeedAcrossReplicasTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  private static final String NS = "mcp-changes";
  private static Client client;
  private static Replica a;
  private static Replica b;

  @BeforeAll
  static void replicas() {
    Cluster cluster = CLUSTER.get();
    client = cluster.client(NS, c -> {});
    client.keyRing().blocking().create();
    a = Replica.start(cluster, NS, "A");
    b = Replica.start(cluster, NS, "B");
  }

  @AfterAll
  static void stop() {
    a.close();
    b.close();
    client.close();
  }

  private static void touch(Replica r, String kind, String uri, int count) {
    Sdk.client(r.url())
        .tool("touch")
        .arguments(Map.of("kind", kind, "uri", uri, "count", count))
        .call();
  }

  @Test
  void aChangeBroadcastThroughAIsHeardOnB() {
    // The one listener of tools changes in this class (see theKeysAreTheOtherClientsLayout).
    try (Listener onB = Listener.open(Sdk.client(b.url()), true, "cart://1")) {
      touch(a, "tools", "-", 1);
      assertInstanceOf(SubscriptionEvent.ToolsListChanged.class, onB.next());
      touch(a, "resource", "cart://1", 1);
      onB.expectUpdate("cart://1");
    }
  }

  @Test
  void nothingBroadcastAfterTheAcknowledgementIsLost() {
    McpSyncClient onB = Sdk.client(b.url());
    // A listen acknowledged, then at once a broadcast on the other replica: heard, every time.
    for (int round = 0; round < 10; round++) {
      String uri = "cart://ack-" + round;
      try (Listener l = Listener.open(onB, uri)) {
        touch(a, "resource", uri, 1);
        l.expectUpdate(uri);
      }
    }
    // A burst: every change once, in the order committed.
    String[] uris =
        IntStream.range(0, 40).mapToObj(i -> "cart://burst-" + i).toArray(String[]::new);
    try (Listener l = Listener.open(onB, uris)) {
      touch(a, "resource", "cart://burst", 40);
      assertEquals(List.of(uris), l.updates(40));
    }
  }

  @Test
  void aRestartedReplicaMissesNothingAfterItsAcknowledgement() {
    Listener before = Listener.open(Sdk.client(b.url()), "cart://r");
    b.restart(); // SIGKILL, then a new process
    // The listen stream of the killed process ends; the SDK's client says so.
    Object end = before.next();
    assertInstanceOf(Throwable.class, end, "the lost stream ends with an error: " + end);
    before.close();
    for (int round = 0; round < 5; round++) {
      String uri = "cart://r-" + round; // a URI of its own: closed streams are never written to
      try (Listener l = Listener.open(Sdk.client(b.url()), uri)) {
        touch(a, "resource", uri, 1);
        l.expectUpdate(uri);
      }
    }
  }

  @Test
  void theKeysAreTheOtherClientsLayout() {
    // What another language's replica writes for a resource update is heard here ...
    try (Listener l = Listener.open(Sdk.client(b.url()), "cart://from-python")) {
      String key = "mcp/resources/" + ChangeLayout.digestName("cart://from-python");
      client.stateTool().blocking().store(key, Map.of("uri", "cart://from-python"));
      l.expectUpdate("cart://from-python");
    }
    // ... and what this one writes is where they read it. (No listener here wants list changes
    // of prompts: a listen stream this class closed is never written to again.)
    touch(a, "resource", "cart://to-rust", 1);
    touch(a, "prompts", "-", 1);
    var state = client.stateTool().blocking();
    assertEquals(
        Map.of("uri", "cart://to-rust"),
        state
            .get("mcp/resources/" + ChangeLayout.digestName("cart://to-rust"), Map.class)
            .orElseThrow());
    assertEquals(
        Map.of("changed", "prompts"), state.get("mcp/lists/prompts", Map.class).orElseThrow());
  }
}
