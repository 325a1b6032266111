package io.github.handlestore.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs one cell: {@code tasks} chains of calls, each starting its next call when the last one ends,
 * for a while. A task is a chain of futures, not a thread: the way a Java author keeps N calls of
 * an asynchronous client (this one's or Lettuce's) in flight, and what the TypeScript driver's
 * promises do; a thread per task would measure the threads as well.
 */
final class CellRunner {
  private CellRunner() {}

  /** {@code op} at {@code tasks} calls in flight for {@code seconds}, as a line of output. */
  static Cell run(String system, String name, Op op, int tasks, double seconds) {
    AtomicReference<Throwable> firstError = new AtomicReference<>();
    long start = System.nanoTime();
    long cpu = ProcessCpu.nanos();
    long end = start + (long) (seconds * 1e9);
    List<Task> all = new ArrayList<>(tasks);
    for (int w = 0; w < tasks; w++) {
      all.add(new Task(op, w * 1_000_000, end, firstError));
    }
    all.forEach(Task::next);
    CompletableFuture.allOf(all.stream().map(t -> t.done).toArray(CompletableFuture[]::new)).join();
    double wall = (System.nanoTime() - start) / 1e9;
    long usedCpu = ProcessCpu.nanos() - cpu;
    long[] sorted = Latencies.sortedUnion(all.stream().map(t -> t.took).toList());
    long errors = all.stream().mapToLong(t -> t.errors).sum();
    Throwable first = firstError.get();
    return new Cell(
        system,
        name,
        tasks,
        sorted.length,
        errors,
        wall,
        sorted.length / wall,
        Latencies.quantileUs(sorted, 0.5),
        Latencies.quantileUs(sorted, 0.99),
        sorted.length == 0 ? 0 : usedCpu / 1e3 / sorted.length,
        first == null ? null : shown(first),
        0);
  }

  /** A failure as the other drivers show theirs: its class and message, unwrapped. */
  static String shown(Throwable e) {
    Throwable cause = e;
    while ((cause instanceof CompletionException || cause instanceof CancellationException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause.getClass().getSimpleName() + ": " + cause.getMessage();
  }

  /**
   * One task: its calls one after another until the cell's end. Its fields are touched by one
   * call's completion at a time, each handing on to the next through the future, and read once
   * {@link #done} completes.
   */
  private static final class Task {
    private final Op op;
    private final int base;
    private final long end;
    private final AtomicReference<Throwable> firstError;
    private final Latencies took = new Latencies();
    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private long errors;
    private int i;

    Task(Op op, int base, long end, AtomicReference<Throwable> firstError) {
      this.op = op;
      this.base = base;
      this.end = end;
      this.firstError = firstError;
    }

    /**
     * Starts calls until one is still in flight (its completion calls this again) or the cell is
     * over. A call already complete is counted here, in the loop, so that a client answering at
     * once does not nest the calls on the stack.
     */
    void next() {
      while (true) {
        long t = System.nanoTime();
        if (t - end >= 0) {
          done.complete(null);
          return;
        }
        CompletableFuture<?> call = start(base + i++);
        if (!call.isDone()) {
          call.whenComplete(
              (ok, e) -> {
                try {
                  ended(t, e);
                  next();
                } catch (Throwable bug) {
                  // Thrown here, it would be lost in the future whenComplete returns, and the
                  // cell would wait for this task for ever.
                  done.completeExceptionally(bug);
                }
              });
          return;
        }
        ended(t, failure(call));
      }
    }

    private CompletableFuture<?> start(int n) {
      try {
        return op.call(n);
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }

    private void ended(long startedAt, Throwable e) {
      if (e == null) {
        took.add(System.nanoTime() - startedAt);
      } else {
        errors++;
        firstError.compareAndSet(null, e);
      }
    }

    private static Throwable failure(CompletableFuture<?> call) {
      try {
        call.join();
        return null;
      } catch (CompletionException | CancellationException e) {
        return e;
      }
    }
  }
}
