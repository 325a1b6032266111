package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.errors.CompactedException;
import io.github.handlestore.client.errors.Reason;
import io.github.handlestore.client.testkit.Cluster;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A watch from a revision the node no longer keeps fails with {@link CompactedException} (the
 * node's oldest revision in its details), on a one-node cluster keeping 5 revisions of history;
 * watching again from a read's revision + 1 works, as the error table says.
 */
class WatchCompactedClusterTest {
  static Cluster cluster;

  @BeforeAll
  static void start() {
    cluster = Cluster.start(1, false, "--watch-history", "5");
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void aWatchFromCompactedHistoryFailsWithCompactedThenResumesFromARead() {
    try (Client c = cluster.client("java-compacted", b -> {})) {
      BlockingStateTool tool = c.stateTool().blocking();
      long first = tool.store("c/0", 0);
      for (int i = 1; i < 20; i++) {
        tool.store("c/" + i, i);
      }
      CompactedException e =
          error(
              CompactedException.class,
              c.watch(WatchTarget.prefix("c/"), WatchOptions.DEFAULT.fromRevision(first)));
      assertEquals(Reason.COMPACTED, e.reason().orElseThrow());
      assertTrue(e.compactRevision() > first, "the oldest revision kept: " + e.compactRevision());

      long read = tool.retrieve("c/19").orElseThrow().modRevision();
      try (BlockingWatch w =
          value(c.watch(WatchTarget.prefix("c/"), WatchOptions.DEFAULT.fromRevision(read + 1)))
              .blocking()) {
        tool.store("c/20", 20);
        WatchBatch b = w.poll(Duration.ofSeconds(10)).orElseThrow();
        assertEquals(List.of("c/20"), b.changes().stream().map(Change::key).toList());
      }
    }
  }
}
