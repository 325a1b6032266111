package io.github.handlestore.client.internal;

import io.github.handlestore.client.errors.CallDeadlineException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Shares calls among concurrent requests of one client, as the other clients' coalescers do: the
 * seam under {@link Writes} (writes share Writes.Submit) and {@link Reads} (point reads share
 * Reads.Submit).
 *
 * <p>At most {@code maxCalls} calls are in flight. A request that finds a call free is sent at
 * once, alone: a lone caller waits for nothing. A request that finds them all busy waits in a
 * queue, and when a call ends, what queued by then leaves together in the next one, up to the
 * bounds. Each request still gets its own answer or error; a call that fails as a whole fails each
 * of its requests. A request whose caller gave up while it waited is never sent.
 */
public final class Coalescer<I, R> {
  /** Sends items in one call (with their own timeout, or null: the call timeout). */
  @FunctionalInterface
  public interface Submit<I, R> {
    CompletableFuture<List<Result<R>>> submit(List<I> items, Duration timeout);
  }

  /** One request's answer or error. */
  public record Result<R>(R value, Throwable error) {
    /** An answer. */
    public static <R> Result<R> of(R value) {
      return new Result<>(value, null);
    }

    /** An error. */
    public static <R> Result<R> failed(Throwable error) {
      return new Result<>(null, error);
    }
  }

  /** How many calls, and how much in one. */
  public record Bounds(int maxCalls, int maxItems, int maxBytes) {}

  private final Submit<I, R> submit;
  private final String what;
  private final Bounds bounds;
  private final Duration timeout;
  private final Consumer<I> discard;
  private final ScheduledExecutorService timer;

  private final Deque<Waiter<I, R>> waiting = new ArrayDeque<>();
  private int inFlight;

  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong calls = new AtomicLong();

  /**
   * A coalescer of {@code what} ("write", "read") requests; {@code discard} gives up a request that
   * was never sent; {@code timeout} bounds a wait in the queue when the caller names none.
   */
  public Coalescer(
      Submit<I, R> submit,
      String what,
      Bounds bounds,
      Duration timeout,
      Consumer<I> discard,
      ScheduledExecutorService timer) {
    this.submit = submit;
    this.what = what;
    this.bounds = bounds;
    this.timeout = timeout;
    this.discard = discard;
    this.timer = timer;
  }

  private static final class Waiter<I, R> {
    final I item;
    final int size;
    final CompletableFuture<R> done = new CompletableFuture<>();

    Waiter(I item, int size) {
      this.item = item;
      this.size = size;
    }
  }

  /** Requests sent and the calls that carried them. */
  public CallCount stats() {
    return new CallCount(sent.get(), calls.get());
  }

  /** Requests sent, and the calls that carried them. */
  public record CallCount(long sent, long calls) {}

  /**
   * Sends {@code item}, alone or with others, and gives its answer. Ending the future (cancel,
   * timeout) gives the request up: unsent, it is never sent; sent alone, its call stops.
   */
  public CompletableFuture<R> run(I item, int size, Duration callTimeout) {
    Waiter<I, R> w;
    synchronized (this) {
      if (inFlight < bounds.maxCalls() && waiting.isEmpty()) {
        inFlight++;
        w = null;
      } else {
        w = new Waiter<>(item, size);
        waiting.add(w);
        if (inFlight < bounds.maxCalls()) {
          inFlight++;
          drainLater();
        }
      }
    }
    return w == null ? alone(item, callTimeout) : await(w, callTimeout);
  }

  /** A request sent at once on a free call; the slot drains the queue when it ends. */
  private CompletableFuture<R> alone(I item, Duration callTimeout) {
    CompletableFuture<List<Result<R>>> call = call(List.of(item), callTimeout);
    CompletableFuture<R> out = new CompletableFuture<>();
    Futures.linked(out, call);
    call.whenComplete(
        (results, error) -> {
          release();
          if (error != null) {
            out.completeExceptionally(Futures.unwrap(error));
          } else {
            Futures.complete(out, results.get(0).value(), results.get(0).error());
          }
        });
    return out;
  }

  /** Waits for a queued request's answer, or for its caller (or its deadline) to give up. */
  private CompletableFuture<R> await(Waiter<I, R> w, Duration callTimeout) {
    Duration budget = callTimeout == null ? timeout : callTimeout;
    Future<?> timeUp;
    try {
      timeUp =
          timer.schedule(
              () -> w.done.completeExceptionally(new CallDeadlineException(budget, gaveUp(w))),
              budget.toNanos(),
              TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      timeUp = null;
    }
    Future<?> deadline = timeUp;
    w.done.whenComplete(
        (v, e) -> {
          if (deadline != null) {
            deadline.cancel(false);
          }
          if (remove(w)) {
            discard.accept(w.item);
          }
        });
    return w.done;
  }

  /** Why a queued request is still unanswered at its deadline. */
  private Exception gaveUp(Waiter<I, R> w) {
    synchronized (this) {
      if (waiting.contains(w)) {
        return new Exception(
            "waiting for a free call (every " + what + " call of this client is busy)");
      }
    }
    return new Exception("the shared " + what + " call carrying it did not answer");
  }

  private synchronized boolean remove(Waiter<I, R> w) {
    return waiting.remove(w);
  }

  /** A lone call ended: its slot drains what queued meanwhile, or is freed. */
  private void release() {
    synchronized (this) {
      if (waiting.isEmpty()) {
        inFlight--;
        return;
      }
    }
    drainLater();
  }

  private void drainLater() {
    try {
      timer.execute(this::drain);
    } catch (RejectedExecutionException e) {
      drain();
    }
  }

  /** Sends what is queued, call after call, on the slot it was given. */
  private void drain() {
    List<Waiter<I, R>> batch;
    synchronized (this) {
      batch = take();
      if (batch.isEmpty()) {
        inFlight--;
        return;
      }
    }
    List<I> items = new ArrayList<>(batch.size());
    batch.forEach(w -> items.add(w.item));
    call(items, null)
        .whenComplete(
            (results, error) -> {
              for (int i = 0; i < batch.size(); i++) {
                CompletableFuture<R> done = batch.get(i).done;
                if (error != null) {
                  done.completeExceptionally(Futures.unwrap(error));
                } else {
                  Futures.complete(done, results.get(i).value(), results.get(i).error());
                }
              }
              drainLater();
            });
  }

  /** The next call's requests, in order, up to the bounds (at least one). Holds the lock. */
  private List<Waiter<I, R>> take() {
    List<Waiter<I, R>> batch = new ArrayList<>();
    long bytes = 0;
    while (!waiting.isEmpty()) {
      Waiter<I, R> next = waiting.peekFirst();
      boolean full = batch.size() >= bounds.maxItems() || bytes + next.size > bounds.maxBytes();
      if (!batch.isEmpty() && full) {
        break;
      }
      waiting.removeFirst();
      if (next.done.isDone()) {
        discard.accept(next.item);
        continue;
      }
      bytes += next.size;
      batch.add(next);
    }
    return batch;
  }

  private CompletableFuture<List<Result<R>>> call(List<I> items, Duration callTimeout) {
    sent.addAndGet(items.size());
    calls.incrementAndGet();
    CompletableFuture<List<Result<R>>> f;
    try {
      f = submit.submit(items, callTimeout);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return Futures.map(
        f,
        results -> {
          if (results.size() != items.size()) {
            throw new IllegalStateException(
                "handlestore: the node answered "
                    + results.size()
                    + " results for "
                    + items.size()
                    + " requests");
          }
          return results;
        });
  }
}
