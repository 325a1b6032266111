package io.github.handlestore.client;

import io.github.handlestore.client.errors.CallDeadlineException;
import io.github.handlestore.client.errors.NotFoundException;
import io.github.handlestore.client.errors.RevisionMismatchException;
import io.github.handlestore.client.internal.Futures;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

/**
 * {@link HandleStore#update}'s compare-and-set loop. The first read may be stale: the leader checks
 * the compare-and-set against the revision read, so an old value is refused, never written over.
 * After a conflict, or if the handle seems absent (a node behind the write that made it), reads are
 * linearizable. Ending the result (a cancel, a timeout) cancels the step in flight.
 */
final class UpdateLoop<T> {
  private final HandleStore<T> store;
  private final String id;
  private final UnaryOperator<T> fn;
  private final Duration budget;
  private final long deadline;
  private final CompletableFuture<Optional<T>> out = new CompletableFuture<>();
  private volatile CompletableFuture<?> current;

  UpdateLoop(HandleStore<T> store, String id, UnaryOperator<T> fn, Duration budget) {
    this.store = store;
    this.id = id;
    this.fn = fn;
    this.budget = budget;
    this.deadline = System.nanoTime() + budget.toNanos();
  }

  CompletableFuture<Optional<T>> start() {
    out.whenComplete(
        (v, e) -> {
          CompletableFuture<?> step = current;
          if (step != null && !step.isDone()) {
            step.cancel(false);
          }
        });
    read(Consistency.STALE);
    return out;
  }

  /** What is left of the budget; the loop fails once it is spent. */
  private Duration left() {
    return Duration.ofNanos(deadline - System.nanoTime());
  }

  private boolean spent(Throwable last) {
    if (left().isNegative() || left().isZero()) {
      out.completeExceptionally(new CallDeadlineException(budget, last));
      return true;
    }
    return out.isDone();
  }

  private void read(Consistency c) {
    if (spent(null)) {
      return;
    }
    CompletableFuture<Optional<Versioned<T>>> step = store.read(id, c, left());
    current = step;
    step.whenComplete(
        (cur, e) -> {
          if (e != null) {
            out.completeExceptionally(Futures.unwrap(e));
          } else if (cur.isPresent()) {
            write(cur.get());
          } else if (c == Consistency.STALE) {
            read(Consistency.LINEARIZABLE);
          } else {
            out.complete(Optional.empty());
          }
        });
  }

  private void write(Versioned<T> cur) {
    T next;
    try {
      next = fn.apply(cur.value());
    } catch (RuntimeException x) {
      out.completeExceptionally(x);
      return;
    }
    if (spent(null)) {
      return;
    }
    CompletableFuture<WriteOutcome> step;
    try {
      step = store.writeBack(id, next, cur.modRevision(), left());
    } catch (RuntimeException x) {
      out.completeExceptionally(x);
      return;
    }
    current = step;
    step.whenComplete(
        (w, e) -> {
          Throwable err = e == null ? null : Futures.unwrap(e);
          if (err == null) {
            out.complete(Optional.ofNullable(next));
          } else if (err instanceof RevisionMismatchException) {
            read(Consistency.LINEARIZABLE);
          } else if (err instanceof NotFoundException) {
            out.complete(Optional.empty());
          } else {
            out.completeExceptionally(err);
          }
        });
  }
}
