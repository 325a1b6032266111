package io.github.handlestore.client.internal;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/** The wait between retries: full jitter over {@code base * 2^tries}, capped at {@code max}. */
public record Backoffs(Duration base, Duration max) {
  /** The time before the next try after {@code tries} failed ones. */
  Duration waitAfter(int tries) {
    int shift = Math.min(tries, 16);
    long b = base.toNanos();
    long grown = b > (Long.MAX_VALUE >> shift) ? Long.MAX_VALUE : b << shift;
    long limit = Math.min(max.toNanos(), grown);
    if (limit <= 0) {
      return Duration.ZERO;
    }
    return Duration.ofNanos(ThreadLocalRandom.current().nextLong(limit + 1));
  }
}
