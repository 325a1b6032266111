package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.errors.CallDeadlineException;
import io.github.handlestore.client.errors.NoQuorumException;
import io.github.handlestore.client.errors.PermissionDeniedException;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.FakeNode;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The retry loop against stand-in nodes that refuse on cue: where the next attempt goes, what ends
 * the loop (the answer, a refusal that is not retried, the deadline, the caller), and that a
 * retried write keeps its write id.
 */
class RetryLoopTest {
  static Client client(Duration callTimeout, FakeNode... nodes) {
    ClientConfig.Builder b =
        ClientConfig.builder().namespace("java-retry").callTimeout(callTimeout);
    b.endpoints(java.util.Arrays.stream(nodes).map(FakeNode::addr).toList());
    return new Client(b.build());
  }

  /** Waits until {@code node} got {@code n} calls. */
  static void callsReach(FakeNode node, int n) {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (node.calls() < n && System.nanoTime() < end) {
      Cluster.sleep(Duration.ofMillis(10));
    }
    assertTrue(node.calls() >= n, "calls: " + node.calls());
  }

  /** {@code node} gets no more calls. */
  static void noMoreCalls(FakeNode node) {
    // An attempt already on the wire may still arrive; none may start after it.
    Cluster.sleep(Duration.ofMillis(200));
    int at = node.calls();
    Cluster.sleep(Duration.ofMillis(1500));
    assertEquals(at, node.calls(), "the retry loop went on after the call ended");
  }

  @Test
  void aRefusalNamingTheLeaderSendsTheRetryThereWithTheSameWriteId() {
    try (FakeNode follower = new FakeNode();
        FakeNode bystander = new FakeNode();
        FakeNode leader = new FakeNode();
        Client c = client(Duration.ofSeconds(10), follower, bystander, leader)) {
      // The next node in order would refuse for good: only the leader named answers.
      bystander.refuse(Status.Code.PERMISSION_DENIED, "permission_denied", "");
      follower.refuse(Status.Code.UNAVAILABLE, "not_leader", leader.addr());
      assertEquals(7L, value(c.stateTool().store("k", 1)));
      assertEquals(1, follower.calls());
      assertEquals(1, leader.calls());
      assertEquals(0, bystander.calls());
      assertEquals(leader.addr(), c.preferred());
      assertEquals(follower.writeIds(), leader.writeIds());
      assertEquals(c.clientId(), leader.writeIds().get(0).getClientId());
    }
  }

  @Test
  void aRefusalThatIsNotRetriedComesAtOnce() {
    try (FakeNode node = new FakeNode();
        Client c = client(Duration.ofSeconds(30), node)) {
      node.refuse(Status.Code.PERMISSION_DENIED, "permission_denied", "");
      error(PermissionDeniedException.class, c.stateTool().store("k", 1));
      assertEquals(1, node.calls());
    }
  }

  @Test
  void theDeadlineEndsTheRetriesWithTheLastRefusal() {
    try (FakeNode node = new FakeNode();
        Client c = client(Duration.ofSeconds(30), node)) {
      value(c.stateTool().store("warm", 1)); // the connection is up: the budget is all retries
      node.refuse(Status.Code.UNAVAILABLE, "no_quorum", "");
      long start = System.nanoTime();
      CallDeadlineException e =
          error(
              CallDeadlineException.class,
              c.stateTool().withTimeout(Duration.ofMillis(500)).store("k", 1));
      assertInstanceOf(
          NoQuorumException.class,
          e.getCause(),
          () -> e + " / " + e.getCause() + " after " + node.calls());
      assertTrue(node.calls() > 2, "retried: " + node.calls());
      assertTrue(
          System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "bounded by the deadline");
      noMoreCalls(node);
    }
  }

  @Test
  void aCancelledCallStopsItsRetryLoopAtOnce() {
    try (FakeNode node = new FakeNode();
        Client c = client(Duration.ofSeconds(60), node)) {
      node.refuse(Status.Code.UNAVAILABLE, "no_quorum", "");
      CompletableFuture<Long> write = c.stateTool().store("k", 1);
      CompletableFuture<?> read =
          c.handleStore("s", Integer.class).build().get(Formats.newHandleId(""));
      callsReach(node, 6);
      write.cancel(true);
      read.cancel(true);
      assertTrue(write.isCancelled() && read.isCancelled());
      noMoreCalls(node);
    }
  }

  @Test
  void aCancelReachesTheAttemptInFlight() {
    try (FakeNode node = new FakeNode();
        Client c = client(Duration.ofSeconds(60), node)) {
      value(c.stateTool().store("warm", 1));
      node.hang();
      CompletableFuture<Long> write = c.stateTool().store("k", 1);
      callsReach(node, 2);
      write.cancel(true);
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
      while (node.cancelled() == 0 && System.nanoTime() < end) {
        Cluster.sleep(Duration.ofMillis(10));
      }
      assertEquals(1, node.cancelled(), "the node still holds the cancelled call");
    }
  }

  @Test
  void aCallerTimeoutOnTheFutureStopsItsRetryLoop() {
    try (FakeNode node = new FakeNode();
        Client c = client(Duration.ofSeconds(60), node)) {
      node.refuse(Status.Code.UNAVAILABLE, "no_quorum", "");
      CompletableFuture<Long> write =
          c.stateTool().store("k", 1).orTimeout(300, TimeUnit.MILLISECONDS);
      error(java.util.concurrent.TimeoutException.class, write);
      noMoreCalls(node);
    }
  }

  @Test
  void anInterruptedBlockingCallStopsItsRetryLoop() throws InterruptedException {
    try (FakeNode node = new FakeNode();
        Client c = client(Duration.ofSeconds(60), node)) {
      node.refuse(Status.Code.UNAVAILABLE, "no_quorum", "");
      CompletableFuture<Throwable> thrown = new CompletableFuture<>();
      Thread t =
          new Thread(
              () -> {
                try {
                  c.stateTool().blocking().store("k", 1);
                } catch (RuntimeException e) {
                  thrown.complete(e);
                }
              });
      t.start();
      callsReach(node, 3);
      t.interrupt();
      t.join(10_000);
      assertInstanceOf(CancellationException.class, value(thrown));
      noMoreCalls(node);
    }
  }

  @Test
  void aClosedClientRefusesCalls() {
    FakeNode node = new FakeNode();
    Client c = client(Duration.ofSeconds(5), node);
    c.close();
    node.close();
    assertThrows(IllegalStateException.class, () -> c.stateTool().blocking().store("k", 1));
  }
}
