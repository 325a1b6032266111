package io.github.handlestore.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A cell that loses its count of tasks (a chain that never ends) fails in time, never hangs. */
@Timeout(value = 20, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CellRunnerTest {
  private static final Executor LATER = CompletableFuture.delayedExecutor(1, TimeUnit.MILLISECONDS);

  @Test
  void keepsTasksCallsInFlightAndCountsThoseThatSucceeded() {
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    Op op =
        i -> {
          most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
          return CompletableFuture.runAsync(inFlight::decrementAndGet, LATER);
        };
    Cell c = CellRunner.run("s", "o", op, 8, 0.3);
    assertEquals(8, most.get());
    assertEquals(0, c.errors());
    assertTrue(c.ops() > 8, "ops " + c.ops());
    assertEquals(c.ops() / c.seconds(), c.throughput(), 1e-6);
    assertTrue(c.p50Us() >= 1_000, "p50 " + c.p50Us());
    assertTrue(c.p99Us() >= c.p50Us());
    assertNull(c.firstError());
  }

  @Test
  void callsAnsweredAtOnceDoNotNestOnTheStack() {
    // Nested, a few ten thousand calls overflow the stack; a second gives far more on any machine.
    Cell c = CellRunner.run("s", "o", i -> CompletableFuture.completedFuture(i), 1, 1.0);
    assertTrue(c.ops() > 50_000, "ops " + c.ops());
    assertEquals(0, c.errors());
  }

  @Test
  void givesEachCallAnIndexOfItsOwn() {
    Set<Integer> seen = ConcurrentHashMap.newKeySet();
    AtomicInteger calls = new AtomicInteger();
    Op op =
        i -> {
          calls.incrementAndGet();
          seen.add(i);
          return CompletableFuture.runAsync(() -> {}, LATER);
        };
    CellRunner.run("s", "o", op, 4, 0.1);
    assertEquals(calls.get(), seen.size());
  }

  @Test
  void countsFailuresAndKeepsTheFirstUnwrapped() {
    AtomicInteger n = new AtomicInteger();
    Op op =
        i -> {
          if (n.incrementAndGet() % 2 == 0) {
            throw new IllegalStateException("thrown " + i);
          }
          return CompletableFuture.supplyAsync(
              () -> {
                throw new IllegalArgumentException("failed");
              },
              LATER);
        };
    // A second: enough for many failures of both kinds on a loaded machine (0.1 s saw one).
    Cell c = CellRunner.run("s", "o", op, 2, 1.0);
    assertEquals(0, c.ops());
    assertTrue(c.errors() > 2, "errors " + c.errors());
    assertTrue(
        c.firstError().equals("IllegalArgumentException: failed")
            || c.firstError().startsWith("IllegalStateException: thrown "),
        c.firstError());
    assertEquals(0, c.p50Us());
    assertEquals(0.0, c.clientCpuUs());
  }

  @Test
  void printsTheFieldsTheHarnessReads() throws Exception {
    Cell c =
        new Cell("java-client", "mint", 64, 10, 1, 2.0, 5.0, 300, 900, 12.5, null, 0)
            .withWarmup(3.5);
    JsonNode json = new ObjectMapper().readTree(c.json());
    Set<String> names = new TreeSet<>();
    for (Iterator<String> it = json.fieldNames(); it.hasNext(); ) {
      names.add(it.next());
    }
    assertEquals(
        new TreeSet<>(
            List.of(
                "system",
                "op",
                "concurrency",
                "ops",
                "errors",
                "seconds",
                "throughput",
                "p50_us",
                "p99_us",
                "client_cpu_us",
                "first_error",
                "warmup_s")),
        names);
    assertEquals(64, json.get("concurrency").asInt());
    assertTrue(json.get("first_error").isNull());
    assertEquals(3.5, json.get("warmup_s").asDouble());
    assertEquals(2.0, json.get("seconds").asDouble());
  }

  @Test
  void quantilesAreTheElementAtFloorQTimesN() {
    Latencies l = new Latencies();
    for (int i = 100; i >= 1; i--) {
      l.add(i * 1_000L);
    }
    long[] sorted = Latencies.sortedUnion(List.of(l, new Latencies()));
    assertEquals(51, Latencies.quantileUs(sorted, 0.5));
    assertEquals(100, Latencies.quantileUs(sorted, 0.99));
    assertEquals(0, Latencies.quantileUs(new long[0], 0.5));
  }

  @Test
  void warmupRunsTheWorkloadAtMostItsLimit() {
    AtomicInteger calls = new AtomicInteger();
    Op op =
        i -> {
          calls.incrementAndGet();
          return CompletableFuture.runAsync(() -> {}, LATER);
        };
    assertEquals(0.0, Warmup.run(op, 4, 0));
    assertEquals(0, calls.get());
    double spent = Warmup.run(op, 4, 1.5);
    assertTrue(spent >= 1.0 && spent < 2.0, "spent " + spent);
    assertTrue(calls.get() > 4, "calls " + calls.get());
  }
}
