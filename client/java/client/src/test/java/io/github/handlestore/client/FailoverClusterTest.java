package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.handlestore.client.errors.CallDeadlineException;
import io.github.handlestore.client.errors.UnavailableException;
import io.github.handlestore.client.internal.Futures;
import io.github.handlestore.client.internal.WriteIds;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.proto.v1.StateGrpc;
import io.github.handlestore.proto.v1.StateValue;
import io.github.handlestore.proto.v1.StoreRequest;
import io.github.handlestore.proto.v1.StoreResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Leader following, failover and exactly-once retries on a cluster of its own, whose nodes the
 * tests kill: a leader SIGKILLed mid-writes loses no acknowledged write and applies none twice; a
 * cluster without a quorum refuses writes within the call's deadline.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FailoverClusterTest {
  static Cluster cluster;

  @BeforeAll
  static void start() {
    cluster = Cluster.start(3, false);
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  @Order(1)
  void theSameWriteIdTwiceGetsTheFirstAnswerAndIsAppliedOnce() {
    try (Client c = cluster.client("java-once", b -> {});
        WriteIds.Ticket id = c.newWriteId()) {
      // Create-only: applied twice, it would conflict.
      StoreRequest req =
          StoreRequest.newBuilder()
              .setNamespace(c.namespace())
              .setKey("once")
              .setValue(StateValue.newBuilder().setJson("1"))
              .setExpectedRevision(0)
              .setWriteId(id.id())
              .build();
      StoreResponse first = value(c.invoke(StateGrpc.getStoreMethod(), req));
      StoreResponse again = value(c.invoke(StateGrpc.getStoreMethod(), req));
      assertEquals(first.getRevision(), again.getRevision());
    }
  }

  @Test
  @Order(2)
  void writesSentToAFollowerMoveToTheLeaderItNames() {
    String leader = cluster.node(cluster.waitLeader(Duration.ofSeconds(10))).addr();
    List<String> order = new ArrayList<>(cluster.endpoints());
    order.remove(leader);
    order.add(leader);
    try (Client c = cluster.client("java-move", b -> b.endpoints(order))) {
      value(c.stateTool().store("k", 1));
      value(c.stateTool().store("k", 2));
      assertEquals(leader, c.preferred());
    }
  }

  @Test
  @Order(3)
  void anUnreachableEndpointIsSkipped() {
    List<String> eps = new ArrayList<>(List.of("127.0.0.1:1"));
    eps.addAll(cluster.endpoints());
    try (Client c = cluster.client("java-skip", b -> b.endpoints(eps))) {
      value(c.stateTool().store("k", "v"));
      assertEquals("v", value(c.stateTool().get("k", String.class)).orElseThrow());
    }
  }

  @Test
  @Order(4)
  void writesThroughALeaderKillApplyExactlyOnce() throws InterruptedException {
    try (Client c =
        cluster.client(
            "java-failover",
            b -> b.callTimeout(Duration.ofSeconds(30)).attemptTimeout(Duration.ofSeconds(1)))) {
      StateTool tool = c.stateTool();
      HandleStore<Integer> jobs = c.handleStore("jobs", Integer.class).build();
      value(
          tool.batchStore(
              IntStream.range(0, 60).mapToObj(i -> StoreItem.of(key("old", i), i)).toList()));
      int leader = cluster.waitLeader(Duration.ofSeconds(10));
      AtomicInteger done = new AtomicInteger();
      CompletableFuture<Integer> killed =
          CompletableFuture.supplyAsync(
              () -> {
                while (done.get() < 20) {
                  Cluster.sleep(Duration.ofMillis(1));
                }
                cluster.kill(leader);
                return done.get();
              });
      // Eight iterations in flight at once, each a create-only store, a delete and a mint at
      // the same time: the kill catches writes committed but not yet answered, whose retries a
      // second application would betray (a store conflicting, a delete finding nothing).
      List<String> minted = new ArrayList<>();
      List<CompletableFuture<Void>> iterations = new ArrayList<>();
      Semaphore window = new Semaphore(8);
      for (int i = 0; i < 60; i++) {
        window.acquire();
        int n = i;
        String id = Formats.newHandleId("job");
        minted.add(id);
        CompletableFuture<Void> it =
            CompletableFuture.allOf(
                tool.store(key("new", n), n, StoreOptions.DEFAULT.withExpectedRevision(0)),
                tool.delete(key("old", n))
                    .thenAccept(d -> assertEquals(1, d.count(), "delete " + n + " applied twice")),
                jobs.mintWithId(id, n, Ttl.DEFAULT));
        it.whenComplete(
            (v, e) -> {
              done.incrementAndGet();
              window.release();
            });
        iterations.add(it);
      }
      iterations.forEach(f -> value(f));
      int at = value(killed);
      assertTrue(at < 30, "the leader died with " + at + " of 60 writes acknowledged");
      checkExactlyOnce(tool, jobs, minted);
      int now = cluster.waitLeader(Duration.ofSeconds(30));
      assertNotEquals(leader, now, "no new leader");
      value(tool.store("after", 1));
      assertEquals(cluster.node(now).addr(), c.preferred());
      cluster.spawn(leader);
      cluster.waitLeader(Duration.ofSeconds(30));
    }
  }

  static String key(String prefix, int i) {
    return String.format("%s/%03d", prefix, i);
  }

  static void checkExactlyOnce(StateTool tool, HandleStore<Integer> jobs, List<String> minted) {
    List<String> fresh =
        tool.blocking().scan("new/", ListOptions.DEFAULT).map(StateEntry::key).toList();
    assertEquals(60, fresh.size(), fresh.toString());
    assertEquals("new/000", fresh.get(0));
    assertEquals("new/059", fresh.get(59));
    assertEquals(
        0, value(tool.list("old/", ListOptions.DEFAULT)).entries().size(), "old keys left");
    assertEquals(60L, value(jobs.len()));
    for (int i = 0; i < minted.size(); i++) {
      assertEquals(i, value(jobs.get(minted.get(i))).orElseThrow(), "job " + i);
    }
  }

  @Test
  @Order(5)
  void withoutAQuorumWritesFailFastAndClosed() {
    try (Client c =
        cluster.client(
            "java-quorum",
            b -> b.callTimeout(Duration.ofSeconds(2)).attemptTimeout(Duration.ofMillis(500)))) {
      StateTool tool = c.stateTool();
      value(tool.store("before", 1));
      int leader = cluster.waitLeader(Duration.ofSeconds(10));
      int other = leader == 1 ? 2 : 1;
      cluster.kill(leader);
      cluster.kill(other);
      long start = System.nanoTime();
      try {
        Futures.await(tool.store("during", 1));
        fail("a write was acknowledged without a quorum");
      } catch (UnavailableException e) {
        // Refused by a node that knows there is no quorum.
      } catch (CallDeadlineException e) {
        // Retried until the deadline, each node refusing: never acknowledged.
        assertTrue(e.getCause() instanceof UnavailableException, "last refusal: " + e.getCause());
      }
      long took = System.nanoTime() - start;
      assertTrue(took < Duration.ofSeconds(5).toNanos(), "took " + took / 1_000_000 + " ms");
      cluster.spawn(leader);
      cluster.spawn(other);
      cluster.waitLeader(Duration.ofSeconds(30));
      assertEquals(
          1,
          value(tool.withTimeout(Duration.ofSeconds(20)).get("before", Integer.class))
              .orElseThrow());
    }
  }
}
