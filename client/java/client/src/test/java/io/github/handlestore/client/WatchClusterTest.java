package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.errors.InvalidArgumentException;
import io.github.handlestore.client.testkit.SharedCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Watch on the shared cluster: changes of each kind of target in revision order, from a revision or
 * from now, progress notices, and what a consumer does with the pull face (close, give up a next).
 */
class WatchClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  static Client client;

  @BeforeAll
  static void connect() {
    client = CLUSTER.get().client("java-watch", b -> {});
  }

  @AfterAll
  static void close() {
    if (client != null) {
      client.close();
    }
  }

  /** Pulls until {@code want} changes came, each pull within ten seconds. */
  static List<Change> changes(BlockingWatch w, int want) {
    List<Change> out = new ArrayList<>();
    while (out.size() < want) {
      WatchBatch b =
          w.poll(Duration.ofSeconds(10))
              .orElseThrow(() -> new AssertionError("after " + out.size() + " of " + want));
      out.addAll(b.changes());
    }
    return out;
  }

  @Test
  void aPrefixWatchSeesPutsDeletesAndExpiryInOrder() {
    BlockingStateTool tool = client.stateTool().blocking();
    try (BlockingWatch w =
        BlockingWatch.open(client, WatchTarget.prefix("jobs/"), WatchOptions.DEFAULT)) {
      long r1 = tool.store("jobs/1", Map.of("state", "queued"));
      tool.store("other/1", "not watched");
      long r2 = tool.store("jobs/1", Map.of("state", "done"));
      long r3 = tool.delete("jobs/1").revision();
      tool.store("jobs/2", "short", StoreOptions.DEFAULT.withTtl(Duration.ofMillis(500)));
      List<Change> seen = changes(w, 5);
      assertEquals(5, seen.size(), seen::toString);
      assertEquals(List.of(r1, r2, r3), seen.subList(0, 3).stream().map(Change::revision).toList());
      assertEquals(
          List.of("PUT jobs/1", "PUT jobs/1", "DELETE jobs/1", "PUT jobs/2", "EXPIRE jobs/2"),
          seen.stream().map(c -> c.kind() + " " + c.key()).toList());
      assertEquals("done", seen.get(1).valueAs(Map.class).get("state"));
      assertTrue(seen.get(2).value().isNone());
      assertEquals("", seen.get(0).store());
    }
  }

  @Test
  void aWatchFromARevisionReplaysTheHistoryThroughTheIterator() {
    BlockingStateTool tool = client.stateTool().blocking();
    long first = tool.store("h/a", 1);
    tool.store("h/b", 2);
    List<String> keys = new ArrayList<>();
    try (BlockingWatch w =
        BlockingWatch.open(
            client, WatchTarget.prefix("h/"), WatchOptions.DEFAULT.fromRevision(first))) {
      for (WatchBatch b : w) {
        b.changes().forEach(c -> keys.add(c.key()));
        if (keys.size() >= 2) {
          break;
        }
      }
      assertTrue(w.async().position() >= first + 2, "the position is past what was delivered");
    }
    assertEquals(List.of("h/a", "h/b"), keys);
  }

  @Test
  void aHandleWatchNamesTheStoreAndCloseEndsAWaitingNext() throws Exception {
    HandleStore<Cart> carts = client.handleStore("cart", Cart.class).prefix("cart").build();
    Watch w = value(client.watch(WatchTarget.store("cart"), WatchOptions.DEFAULT.withKeysOnly()));
    String id = value(carts.mint(new Cart()));
    Change c = changes(w.blocking(), 1).get(0);
    assertEquals("cart", c.store());
    assertEquals(id, c.key());
    assertTrue(c.value().isNone(), "keys only");

    CompletableFuture<WatchBatch> waiting = w.next();
    Thread.sleep(100);
    assertFalse(waiting.isDone());
    w.close();
    Throwable e = assertThrows(Exception.class, () -> waiting.get(3, TimeUnit.SECONDS));
    assertInstanceOf(WatchClosedException.class, e.getCause());
    error(WatchClosedException.class, w.next());
    assertFalse(w.blocking().iterator().hasNext(), "a closed watch's iterator ends");
  }

  @Test
  void aHandleWatchDeliversTheHandlesJson() {
    HandleStore<Cart> carts = client.handleStore("cart2", Cart.class).build();
    String id = value(carts.mint(new Cart()));
    try (BlockingWatch w =
        BlockingWatch.open(client, WatchTarget.handle("cart2", id), WatchOptions.DEFAULT)) {
      value(carts.put(id, Cart.of("sku-1")));
      Change c = changes(w, 1).get(0);
      assertEquals(List.of("sku-1"), c.valueAs(Cart.class).items);
    }
  }

  @Test
  void progressNoticesComeWhileNothingChanges() {
    try (BlockingWatch w =
        BlockingWatch.open(
            client, WatchTarget.key("quiet/key"), WatchOptions.DEFAULT.withProgress())) {
      long from = w.async().position();
      WatchBatch b = w.poll(Duration.ofSeconds(10)).orElseThrow();
      assertTrue(b.isProgress(), b::toString);
      assertTrue(b.revision() + 1 >= from, "a notice never goes back: " + b + " from " + from);
    }
  }

  @Test
  void aNextGivenUpLosesNothing() {
    BlockingStateTool tool = client.stateTool().blocking();
    try (BlockingWatch w =
        BlockingWatch.open(client, WatchTarget.prefix("g/"), WatchOptions.DEFAULT)) {
      List<Change> seen = new ArrayList<>();
      for (int i = 0; i < 30; i++) {
        // Given up right after its change was written: the batch it was handed, if any, is
        // still its own; else it goes to a later next().
        CompletableFuture<WatchBatch> gone = w.async().next();
        tool.store("g/" + i, i);
        if (!gone.cancel(false)) {
          seen.addAll(gone.join().changes());
        }
      }
      seen.addAll(changes(w, 30 - seen.size()));
      assertEquals(
          IntStream.range(0, 30).mapToObj(i -> "g/" + i).toList(),
          seen.stream().map(Change::key).toList());
    }
  }

  @Test
  void oneNextWaitsAtATime() {
    try (Watch w = value(client.watch(WatchTarget.prefix("one/")))) {
      CompletableFuture<WatchBatch> first = w.next();
      error(IllegalStateException.class, w.next());
      assertFalse(first.isDone());
    }
  }

  @Test
  void aMalformedTargetIsRefusedBeforeAnyCall() {
    try (Client dead =
        new Client(ClientConfig.builder().endpoints(List.of("127.0.0.1:1")).build())) {
      error(InvalidArgumentException.class, dead.watch(WatchTarget.key("a//b")));
      error(InvalidArgumentException.class, dead.watch(WatchTarget.key("")));
      error(InvalidArgumentException.class, dead.watch(WatchTarget.store("no spaces")));
      error(InvalidArgumentException.class, dead.watch(WatchTarget.handle("cart", "nope")));
      error(InvalidArgumentException.class, dead.watch(WatchTarget.prefix("bad\u0001")));
    }
    assertThrows(IllegalArgumentException.class, () -> WatchOptions.DEFAULT.fromRevision(-1));
  }

  @Test
  void watchesOpenOnTheFollowersInTurn() {
    client.stateTool().blocking().store("f/0", 0);
    String leader = client.preferred();
    List<Watch> watches = new ArrayList<>();
    try {
      Set<String> nodes = new HashSet<>();
      for (int i = 0; i < 4; i++) {
        Watch w = value(client.watch(WatchTarget.prefix("f/")));
        watches.add(w);
        nodes.add(w.node());
      }
      assertFalse(nodes.contains(leader), nodes + " leader " + leader);
      assertEquals(client.endpoints().size() - 1, nodes.size(), nodes::toString);
      client.stateTool().blocking().store("f/1", 1);
      for (Watch w : watches) {
        assertEquals("f/1", changes(w.blocking(), 1).get(0).key());
      }
    } finally {
      watches.forEach(Watch::close);
    }
    assertNotEquals("", leader);
  }
}
