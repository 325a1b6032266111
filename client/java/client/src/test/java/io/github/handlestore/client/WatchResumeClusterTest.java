package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * A watch resumed without a gap or a duplicate, on a cluster of its own: after its node is killed,
 * after its connection is dropped mid-stream while the node lives on, and after the node cut off
 * its slow consumer. The nodes have 24 MiB of watch memory (a watcher's share is 3 MiB, so a
 * consumer that stops pulling is cut off after a few MB); below about 17 MiB a watcher's share is
 * less than two pages of history and a catch-up never gets past its first page (a node issue,
 * reported with this client).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class WatchResumeClusterTest {
  static Cluster cluster;

  @BeforeAll
  static void start() {
    cluster = Cluster.start(3, false, "--watch-memory-mb", "24");
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** Pulls until {@code want} changes came, each pull within {@code each}. */
  static List<Change> pull(BlockingWatch w, int want, Duration each) {
    List<Change> out = new ArrayList<>();
    while (out.size() < want) {
      WatchBatch b =
          w.poll(each).orElseThrow(() -> new AssertionError("after " + out.size() + " of " + want));
      out.addAll(b.changes());
    }
    return out;
  }

  /** Every value {@code from..from+n-1} once, in order, at rising revisions. */
  static void onceInOrder(List<Change> seen, int from, int n) {
    assertEquals(n, seen.size(), "every change once");
    long last = 0;
    for (int i = 0; i < n; i++) {
      Change c = seen.get(i);
      assertEquals(from + i, ((Number) c.valueAs(Map.class).get("i")).intValue(), "change " + i);
      assertTrue(c.revision() > last, "revision " + c.revision() + " after " + last);
      last = c.revision();
    }
  }

  static Map<String, Object> item(int i) {
    return Map.of("i", i);
  }

  @Test
  @Order(1)
  void aWatchResumesOnAnotherNodeAfterItsNodeIsKilled() {
    try (Client c = cluster.client("java-kill", b -> {});
        BlockingWatch w = BlockingWatch.open(c, WatchTarget.prefix("n/"), WatchOptions.DEFAULT)) {
      BlockingStateTool tool = c.stateTool().blocking();
      String serving = w.async().node();
      tool.store("n/0", item(0));
      onceInOrder(pull(w, 1, Duration.ofSeconds(10)), 0, 1);
      int killed = idOf(serving);
      cluster.kill(killed);
      for (int i = 1; i < 20; i++) {
        tool.store("n/" + i, item(i));
      }
      onceInOrder(pull(w, 19, Duration.ofSeconds(30)), 1, 19);
      assertNotEquals(serving, w.async().node(), "still served by the killed node");
      assertTrue(w.async().resumes() >= 1);
      cluster.spawn(killed);
      cluster.waitLeader(Duration.ofSeconds(30));
    }
  }

  @Test
  @Order(2)
  void aConnectionDroppedMidStreamResumesWithoutAGapOrADuplicate() {
    List<Proxy> proxies = cluster.endpoints().stream().map(Proxy::to).toList();
    List<String> via = proxies.stream().map(Proxy::addr).toList();
    try (Client watcher = cluster.client("java-drop", b -> b.endpoints(via));
        Client writer = cluster.client("java-drop", b -> {});
        BlockingWatch w =
            BlockingWatch.open(watcher, WatchTarget.prefix("d/"), WatchOptions.DEFAULT)) {
      Proxy serving = proxies.get(via.indexOf(w.async().node()));
      CompletableFuture<Void> writes =
          CompletableFuture.runAsync(
              () -> {
                for (int i = 0; i < 100; i++) {
                  writer.stateTool().blocking().store("d/" + i, item(i));
                }
              });
      List<Change> seen = new ArrayList<>(pull(w, 20, Duration.ofSeconds(10)));
      serving.cut();
      assertTrue(serving.cuts() > 0, "the watch's connection was open");
      seen.addAll(pull(w, 100 - seen.size(), Duration.ofSeconds(30)));
      value(writes);
      onceInOrder(seen, 0, 100);
      assertTrue(w.async().resumes() >= 1, "the watch resumed");
    } finally {
      proxies.forEach(Proxy::close);
    }
  }

  @Test
  @Order(3)
  void aConsumerThatStopsPullingIsCutOffByTheNodeAndResumed() {
    String pad = "x".repeat(40_000);
    try (Client c = cluster.client("java-slow", b -> {});
        BlockingWatch w = BlockingWatch.open(c, WatchTarget.prefix("s/"), WatchOptions.DEFAULT)) {
      BlockingStateTool tool = c.stateTool().blocking();
      // About 12 MB while nothing is pulled: more than the client holds (64 responses and gRPC's
      // 1 MiB window) and the node's share (3 MiB), so the node cuts the watcher off.
      for (int i = 0; i < 300; i++) {
        tool.store("s/" + i, Map.of("i", i, "pad", pad));
      }
      Cluster.sleep(Duration.ofSeconds(3)); // the node waits a second before it cuts
      onceInOrder(pull(w, 300, Duration.ofSeconds(30)), 0, 300);
      assertTrue(w.async().resumes() >= 1, "the node cut the slow watcher off, and it resumed");
    }
  }

  private static int idOf(String addr) {
    for (int id = 1; id <= 3; id++) {
      if (cluster.node(id).addr().equals(addr)) {
        return id;
      }
    }
    throw new AssertionError("no node at " + addr);
  }
}
