package io.github.handlestore.bench;

import java.lang.management.ManagementFactory;

/**
 * The CPU this process has used, user and system, every thread's (the client's, the JIT's, the
 * collector's): what getrusage(RUSAGE_SELF) gives the Go driver and process.cpuUsage() the
 * TypeScript one.
 */
final class ProcessCpu {
  private static final com.sun.management.OperatingSystemMXBean OS = bean();

  private ProcessCpu() {}

  private static com.sun.management.OperatingSystemMXBean bean() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os;
    }
    throw new IllegalStateException(
        "this JVM does not report its process CPU time (com.sun.management)");
  }

  /** Nanoseconds of CPU so far. */
  static long nanos() {
    return OS.getProcessCpuTime();
  }
}
