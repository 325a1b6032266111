package io.github.handlestore.bench;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntFunction;

/** What both systems' workloads share, as the Go and TypeScript drivers have it. */
final class BenchData {
  /** A JSON string of 256 characters, as client_bench.py's. */
  static final String VALUE = "v".repeat(256);

  /** Keys written before a read workload, read at random. */
  static final int PRELOAD = 1000;

  /** The minted handles' and SET EX keys' TTL. */
  static final Duration TTL = Duration.ofHours(1);

  private static final int BATCH = 100;

  private BenchData() {}

  /** A random index into the preloaded keys. */
  static int pick() {
    return ThreadLocalRandom.current().nextInt(PRELOAD);
  }

  /** Runs {@code f} on 0..n-1, {@link #BATCH} calls in flight at a time; fails if any call did. */
  static void inBatches(int n, IntFunction<CompletableFuture<?>> f) {
    for (int start = 0; start < n; start += BATCH) {
      int end = Math.min(n, start + BATCH);
      CompletableFuture<?>[] batch = new CompletableFuture<?>[end - start];
      for (int i = start; i < end; i++) {
        batch[i - start] = f.apply(i);
      }
      CompletableFuture.allOf(batch).join();
    }
  }
}
