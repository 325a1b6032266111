package io.github.handlestore.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;

/**
 * Runs a cell's workload, unreported, until the JIT is quiet: in one-second slices, until a slice
 * in which the compilers spent under {@link #QUIET} of it compiling, or for at most a given time.
 * Measured from a cold JVM, the first cells would count the JIT's work (several seconds of CPU for
 * the gRPC, netty and protobuf code on two shared cores) as the client's, and at its speed before
 * its code is compiled; the Go driver has no such cost to leave out.
 */
final class Warmup {
  /** The share of a slice the compilers may spend and still count as quiet. */
  static final double QUIET = 0.05;

  private static final double SLICE_S = 1.0;

  private static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();

  private Warmup() {}

  /**
   * Warms {@code op} at {@code tasks} calls in flight for at most {@code max} s; gives the time.
   */
  static double run(Op op, int tasks, double max) {
    long start = System.nanoTime();
    double spent = 0;
    while (spent < max) {
      long compiledMs = compileMillis();
      double slice = Math.min(SLICE_S, max - spent);
      CellRunner.run("warmup", "warmup", op, tasks, slice);
      spent = (System.nanoTime() - start) / 1e9;
      if (compileMillis() - compiledMs < QUIET * slice * 1e3) {
        break;
      }
    }
    return spent;
  }

  /** The compilers' time so far, or 0 where the JVM does not count it (then one slice is run). */
  private static long compileMillis() {
    return JIT != null && JIT.isCompilationTimeMonitoringSupported()
        ? JIT.getTotalCompilationTime()
        : 0;
  }
}
