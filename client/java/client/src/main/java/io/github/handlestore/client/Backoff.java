package io.github.handlestore.client;

import io.github.handlestore.client.internal.Wire;
import java.time.Duration;

/**
 * The wait between retries: full jitter over {@code base * 2^tries}, capped at {@code max}.
 *
 * @param base the first wait's bound (default 25 ms)
 * @param max the most any wait is (default 1 s)
 */
public record Backoff(Duration base, Duration max) {
  /**
   * The default: 25 ms, doubling, capped at 1 s (proto/wire.txt's backoff_base and backoff_max).
   */
  public static final Backoff DEFAULT = new Backoff(Wire.BACKOFF_BASE, Wire.BACKOFF_MAX);

  /** A backoff; both bounds positive. */
  public Backoff {
    if (base == null
        || max == null
        || base.isNegative()
        || base.isZero()
        || max.compareTo(base) < 0) {
      throw new IllegalArgumentException("backoff: 0 < base <= max");
    }
  }
}
