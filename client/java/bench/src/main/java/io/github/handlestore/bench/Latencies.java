package io.github.handlestore.bench;

import java.util.Arrays;

/**
 * Latencies in nanoseconds, appended without boxing: one per task, merged when its cell ends. Not
 * thread-safe; a task's calls follow one another, each completion handing it on.
 */
final class Latencies {
  private long[] nanos = new long[1 << 14];
  private int size;

  void add(long took) {
    if (size == nanos.length) {
      nanos = Arrays.copyOf(nanos, size * 2);
    }
    nanos[size++] = took;
  }

  int size() {
    return size;
  }

  /** Every latency of {@code parts}, sorted. */
  static long[] sortedUnion(Iterable<Latencies> parts) {
    int total = 0;
    for (Latencies p : parts) {
      total += p.size;
    }
    long[] all = new long[total];
    int at = 0;
    for (Latencies p : parts) {
      System.arraycopy(p.nanos, 0, all, at, p.size);
      at += p.size;
    }
    Arrays.sort(all);
    return all;
  }

  /**
   * The {@code q} quantile of {@code sorted} in whole µs (0 if empty): the element at {@code
   * floor(q * n)}, as the Go and TypeScript drivers take it.
   */
  static long quantileUs(long[] sorted, double q) {
    if (sorted.length == 0) {
      return 0;
    }
    int at = Math.min(sorted.length - 1, (int) (q * sorted.length));
    return sorted[at] / 1_000;
  }
}
