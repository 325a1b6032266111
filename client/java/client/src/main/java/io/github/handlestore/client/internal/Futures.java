package io.github.handlestore.client.internal;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;

/**
 * The few things the client does with futures: derived futures whose end (a cancel, an {@code
 * orTimeout}) reaches back to the call they derive from, so that its retry loop stops at once; and
 * waiting for one on the blocking faces.
 */
public final class Futures {
  private Futures() {}

  /**
   * {@code source} mapped by {@code fn}; ending the result before {@code source} answered (a
   * cancel, a timeout of the caller's) cancels {@code source}.
   */
  public static <T, U> CompletableFuture<U> map(
      CompletableFuture<T> source, Function<? super T, ? extends U> fn) {
    return linked(source.thenApply(fn), source);
  }

  /** {@code source} then {@code fn}'s future, both cancelled by the result's end. */
  public static <T, U> CompletableFuture<U> compose(
      CompletableFuture<T> source, Function<? super T, CompletableFuture<U>> fn) {
    CompletableFuture<U> out = new CompletableFuture<>();
    linked(out, source);
    source.whenComplete(
        (v, e) -> {
          if (e != null) {
            out.completeExceptionally(unwrap(e));
            return;
          }
          CompletableFuture<U> next;
          try {
            next = fn.apply(v);
          } catch (RuntimeException x) {
            out.completeExceptionally(x);
            return;
          }
          linked(out, next);
          next.whenComplete((u, x) -> complete(out, u, x));
        });
    return out;
  }

  /** {@code derived}, whose end before {@code source}'s cancels {@code source}. */
  public static <U> CompletableFuture<U> linked(
      CompletableFuture<U> derived, CompletableFuture<?> source) {
    derived.whenComplete(
        (v, e) -> {
          if (!source.isDone()) {
            source.cancel(false);
          }
        });
    return derived;
  }

  /** Completes {@code out} as {@code value} or {@code error} say. */
  public static <U> void complete(CompletableFuture<U> out, U value, Throwable error) {
    if (error != null) {
      out.completeExceptionally(unwrap(error));
    } else {
      out.complete(value);
    }
  }

  /** The error inside a {@link CompletionException}. */
  public static Throwable unwrap(Throwable e) {
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /**
   * Waits for {@code f}: its value, or its error thrown as it is (a {@link RuntimeException}). An
   * interrupt cancels the call (its retries stop) and throws {@link CancellationException} with the
   * thread's interrupt flag set again.
   */
  public static <T> T await(CompletableFuture<T> f) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      f.cancel(false);
      Thread.currentThread().interrupt();
      CancellationException c = new CancellationException("handlestore: interrupted");
      c.initCause(e);
      throw c;
    } catch (ExecutionException e) {
      Throwable cause = unwrap(e);
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new CompletionException(cause);
    }
  }
}
