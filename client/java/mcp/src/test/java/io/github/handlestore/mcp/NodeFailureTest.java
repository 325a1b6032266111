package io.github.handlestore.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.Node;
import io.github.handlestore.mcp.replica.Replica;
import io.modelcontextprotocol.modern.McpException;
import io.modelcontextprotocol.modern.McpSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The seams when handlestore nodes die under the replicas (a cluster of this class's own): the
 * feed's watch moves to another node without a gap, and a single-use redemption the cluster cannot
 * record is a clear JSON-RPC error, not a refusal in disguise and not a 500.
 */
class NodeFailureTest {
  private static final String NS = "mcp-failover";
  private static Cluster cluster;

  @BeforeAll
  static void start() {
    cluster = Cluster.start(3, false);
    try (Client c = cluster.client(NS, x -> {})) {
      c.keyRing().blocking().create();
    }
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static int nodeAt(String addr) {
    for (int id = 1; id <= 3; id++) {
      Node n = cluster.node(id);
      if (n.addr().equals(addr)) {
        return id;
      }
    }
    throw new AssertionError("no node at " + addr);
  }

  @Test
  void theFeedsWatchResumesOnAnotherNodeWithoutAGap() {
    try (Replica a = Replica.start(cluster, NS, "A");
        Replica b = Replica.start(cluster, NS, "B")) {
      String[] uris = IntStream.range(0, 20).mapToObj(i -> "cart://f-" + i).toArray(String[]::new);
      try (Listener onB = Listener.open(Sdk.client(b.url()), uris)) {
        Sdk.client(a.url())
            .tool("touch")
            .arguments(Map.of("kind", "resource", "uri", "cart://f", "count", 10))
            .call();
        List<String> heard = new ArrayList<>(onB.updates(10));
        // The node serving B's watch of mcp/resources/ dies; A broadcasts on.
        String served = Sdk.text(Sdk.client(b.url()).tool("feed_nodes").call()).split(",")[0];
        int victim = nodeAt(served);
        cluster.kill(victim);
        try {
          // The rest, one by one, while B's watch moves (cart://f-10 .. f-19).
          for (int i = 10; i < 20; i++) {
            Sdk.client(a.url())
                .tool("touch")
                .arguments(Map.of("kind", "resource", "uri", "cart://f-" + i, "count", 1))
                .call();
          }
          heard.addAll(onB.updates(10));
          assertEquals(List.of(uris), heard);
          String now = Sdk.text(Sdk.client(b.url()).tool("feed_nodes").call()).split(",")[0];
          assertTrue(!now.equals(served), "the watch moved off the killed node " + served);
        } finally {
          cluster.spawn(victim);
          cluster.waitLeader(Duration.ofSeconds(30));
        }
      }
    }
  }

  @Test
  void aRedemptionTheClusterCannotRecordIsAClearError() {
    String[] opts = {"--single-use", "true", "--call-timeout-ms", "3000"};
    try (Replica a = Replica.start(cluster, NS, "A1", opts);
        Replica b = Replica.start(cluster, NS, "B1", opts)) {
      McpSchema.CallToolOutcome first = Sdk.client(a.url()).tool("confirm").callOnce();
      String blob = assertInstanceOf(McpSchema.InputRequiredResult.class, first).requestState();
      int leader = cluster.waitLeader(Duration.ofSeconds(30));
      List<Integer> down = new ArrayList<>();
      for (int id = 1; id <= 3 && down.size() < 2; id++) {
        if (id != leader) {
          down.add(id);
        }
      }
      down.forEach(cluster::kill); // no quorum: nothing can be written
      try {
        McpException e =
            assertThrows(
                McpException.class,
                () -> Sdk.client(b.url()).tool("confirm").requestState(blob).callOnce());
        assertEquals(McpSchema.ErrorCodes.INTERNAL_ERROR, e.error().code(), e.getMessage());
        assertTrue(
            e.error().message().startsWith("requestState could not be redeemed"),
            e.error().message());
      } finally {
        down.forEach(cluster::spawn);
        cluster.waitLeader(Duration.ofSeconds(30));
      }
      // (Its outcome stays unknown: the leader may commit the redemption once the others are
      // back, so the blob may then be refused; that is failing closed, as the docs say.)
    }
  }
}
