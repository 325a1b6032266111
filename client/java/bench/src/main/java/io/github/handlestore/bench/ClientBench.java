package io.github.handlestore.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The Java client's mint, get, put and state get against a cluster, beside Lettuce's SET EX and GET
 * against a Redis, each with N calls in flight for a while: what {@code target/release/javaclient}
 * runs (tests/bench/src/bin/javaclient.rs), one JSON object per cell on stdout, as client/go/bench
 * prints them for the Go client.
 *
 * <pre>
 * java -jar client/java/bench/target/handlestore-bench.jar --endpoints 127.0.0.1:7401,... \
 *     --redis redis://127.0.0.1:6379/ --tasks 1,64 --seconds 10
 * </pre>
 */
public final class ClientBench {
  private ClientBench() {}

  /** Runs every cell; exits 2 on a bad flag, 1 if a system cannot be opened or closed. */
  public static void main(String[] args) {
    BenchArgs parsed;
    try {
      parsed = BenchArgs.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.err.println(BenchArgs.USAGE);
      System.exit(2);
      return;
    }
    try {
      run(parsed);
    } catch (Exception e) {
      System.err.println("clientbench: " + CellRunner.shown(e));
      e.printStackTrace();
      System.exit(1);
    }
    // A thread a library leaves behind must not keep the process, and the bench, waiting.
    System.exit(0);
  }

  private static void run(BenchArgs args) throws Exception {
    List<Opener> systems = new ArrayList<>();
    if (!args.endpoints().isEmpty()) {
      systems.add(() -> HandlestoreWorkload.open(args.endpoints()));
    }
    if (!args.redis().isEmpty()) {
      systems.add(() -> LettuceWorkload.open(args.redis()));
    }
    for (Opener open : systems) {
      Workload w = open.open();
      try {
        for (Map.Entry<String, Op> op : w.ops().entrySet()) {
          for (int tasks : args.tasks()) {
            double warm = Warmup.run(op.getValue(), tasks, args.warmup());
            Cell cell =
                CellRunner.run(w.system(), op.getKey(), op.getValue(), tasks, args.seconds());
            print(cell.withWarmup(warm));
          }
        }
      } finally {
        w.closer().close();
      }
    }
  }

  private static void print(Cell cell) {
    System.out.println(cell.json());
    System.out.flush();
  }

  /** Opens one system's workload. */
  @FunctionalInterface
  private interface Opener {
    Workload open();
  }
}
