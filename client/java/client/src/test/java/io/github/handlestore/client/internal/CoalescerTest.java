package io.github.handlestore.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.internal.Coalescer.Result;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The coalescer's rules with calls the test answers by hand: a lone request goes at once and alone;
 * requests that find every call busy leave together in the next one, in order and within the
 * bounds; one whose caller gave up while it waited is never sent.
 */
class CoalescerTest {
  record Call(List<String> items, CompletableFuture<List<Result<String>>> answer) {}

  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
  private final LinkedBlockingQueue<Call> calls = new LinkedBlockingQueue<>();
  private final List<String> discarded = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() {
    timer.shutdownNow();
  }

  Coalescer<String, String> coalescer(int maxItems) {
    return new Coalescer<>(
        (items, timeout) -> {
          CompletableFuture<List<Result<String>>> f = new CompletableFuture<>();
          calls.add(new Call(items, f));
          return f;
        },
        "test",
        new Coalescer.Bounds(1, maxItems, 1 << 20),
        Duration.ofSeconds(30),
        discarded::add,
        timer);
  }

  Call nextCall() throws InterruptedException {
    Call c = calls.poll(10, TimeUnit.SECONDS);
    assertTrue(c != null, "no call");
    return c;
  }

  static void answer(Call c) {
    c.answer().complete(c.items().stream().map(i -> Result.of(i + "!")).toList());
  }

  @Test
  void queuedRequestsShareTheNextCallAndAGivenUpOneIsNeverSent() throws Exception {
    Coalescer<String, String> co = coalescer(2);
    CompletableFuture<String> first = co.run("a", 1, null);
    Call lone = nextCall();
    assertEquals(List.of("a"), lone.items());
    CompletableFuture<String> b = co.run("b", 1, null);
    CompletableFuture<String> gone = co.run("gone", 1, null);
    CompletableFuture<String> c = co.run("c", 1, null);
    CompletableFuture<String> d = co.run("d", 1, null);
    gone.cancel(true);
    answer(lone);
    assertEquals("a!", first.get(10, TimeUnit.SECONDS));
    Call shared = nextCall();
    assertEquals(List.of("b", "c"), shared.items());
    answer(shared);
    Call last = nextCall();
    assertEquals(List.of("d"), last.items());
    answer(last);
    assertEquals("b!", b.get(10, TimeUnit.SECONDS));
    assertEquals("c!", c.get(10, TimeUnit.SECONDS));
    assertEquals("d!", d.get(10, TimeUnit.SECONDS));
    assertEquals(List.of("gone"), discarded);
    assertEquals(new Coalescer.CallCount(4, 3), co.stats());
  }

  @Test
  void aCallThatFailsFailsEachOfItsRequests() throws Exception {
    Coalescer<String, String> co = coalescer(10);
    CompletableFuture<String> a = co.run("a", 1, null);
    Call lone = nextCall();
    CompletableFuture<String> b = co.run("b", 1, null);
    CompletableFuture<String> c = co.run("c", 1, null);
    answer(lone);
    Call shared = nextCall();
    shared.answer().completeExceptionally(new IllegalStateException("down"));
    assertEquals("a!", a.get(10, TimeUnit.SECONDS));
    for (CompletableFuture<String> f : List.of(b, c)) {
      assertTrue(
          f.handle((v, e) -> e != null && Futures.unwrap(e).getMessage().equals("down")).get());
    }
  }

  @Test
  void writeIdsNameTheLowestSeqStillInFlight() {
    WriteIds ids = new WriteIds();
    WriteIds.Ticket one = ids.take();
    WriteIds.Ticket two = ids.take();
    assertEquals(1, two.id().getFirstIncompleteSeq());
    one.close();
    WriteIds.Ticket three = ids.take();
    assertEquals(2, three.id().getFirstIncompleteSeq());
    two.close();
    three.close();
    WriteIds.Ticket four = ids.take();
    assertEquals(4, four.id().getSeq());
    assertEquals(4, four.id().getFirstIncompleteSeq());
    assertEquals(ids.clientId(), four.id().getClientId());
  }
}
