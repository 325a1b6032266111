package io.github.handlestore.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * The driver's flags, the Go driver's (client/go/bench/cmd/clientbench) and one of its own: {@code
 * --endpoints}, {@code --redis}, {@code --tasks 1,64}, {@code --seconds 10}, {@code --warmup 30}.
 * Each as {@code --flag value} or {@code --flag=value}.
 *
 * @param endpoints the cluster's endpoints, comma-separated ("" for none: no java-client cells)
 * @param redis a Redis URL ("" for none: no Lettuce cells)
 * @param tasks the counts of calls in flight, one cell each
 * @param seconds how long a cell runs
 * @param warmup the longest a cell's workload runs, unreported, before the cell, waiting for the
 *     JIT to be quiet ({@link Warmup}); 0 for none
 */
record BenchArgs(
    String endpoints, String redis, List<Integer> tasks, double seconds, double warmup) {
  static final String USAGE =
      "usage: java -jar handlestore-bench.jar [--endpoints HOST:PORT,...] [--redis URL]"
          + " [--tasks 1,64] [--seconds 10] [--warmup 30]";

  /** The flags of {@code args}; a bad one is an {@link IllegalArgumentException} saying which. */
  static BenchArgs parse(String... args) {
    String endpoints = "";
    String redis = "";
    String tasks = "1,64";
    String seconds = "10";
    String warmup = "30";
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      String value;
      int eq = flag.indexOf('=');
      if (eq > 0) {
        value = flag.substring(eq + 1);
        flag = flag.substring(0, eq);
      } else if (i + 1 < args.length) {
        value = args[++i];
      } else {
        throw new IllegalArgumentException(flag + " needs a value");
      }
      switch (flag) {
        case "--endpoints" -> endpoints = value;
        case "--redis" -> redis = value;
        case "--tasks" -> tasks = value;
        case "--seconds" -> seconds = value;
        case "--warmup" -> warmup = value;
        default -> throw new IllegalArgumentException("unknown flag " + flag);
      }
    }
    return new BenchArgs(
        endpoints,
        redis,
        levels(tasks),
        nonNegative("--seconds", seconds, false),
        nonNegative("--warmup", warmup, true));
  }

  private static List<Integer> levels(String tasks) {
    List<Integer> out = new ArrayList<>();
    for (String t : tasks.split(",", -1)) {
      int n;
      try {
        n = Integer.parseInt(t.strip());
      } catch (NumberFormatException e) {
        n = 0;
      }
      if (n < 1) {
        throw new IllegalArgumentException("--tasks: \"" + t + "\" is not a positive count");
      }
      out.add(n);
    }
    return List.copyOf(out);
  }

  private static double nonNegative(String flag, String value, boolean zeroAllowed) {
    double d;
    try {
      d = Double.parseDouble(value);
    } catch (NumberFormatException e) {
      d = Double.NaN;
    }
    if (!(d > 0 || (zeroAllowed && d == 0)) || Double.isInfinite(d)) {
      throw new IllegalArgumentException(
          flag
              + ": \""
              + value
              + "\" is not a "
              + (zeroAllowed ? "non-negative" : "positive")
              + " number of seconds");
    }
    return d;
  }
}
