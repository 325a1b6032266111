package io.github.handlestore.client.testkit;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Waiting on the client's futures in tests, never longer than two minutes. */
public final class Await {
  private Await() {}

  /** The future's value; the test fails on its error or after two minutes. */
  public static <T> T value(CompletableFuture<T> f) {
    try {
      return f.get(2, TimeUnit.MINUTES);
    } catch (ExecutionException e) {
      throw new AssertionError("the call failed: " + e.getCause(), e.getCause());
    } catch (InterruptedException | TimeoutException e) {
      throw new AssertionError(e);
    }
  }

  /** The future's error, which must be a {@code type}; the test fails if it succeeds. */
  public static <E extends Throwable> E error(Class<E> type, CompletableFuture<?> f) {
    try {
      Object v = f.get(2, TimeUnit.MINUTES);
      fail("expected a " + type.getSimpleName() + ", got " + v);
      return null;
    } catch (ExecutionException e) {
      return assertInstanceOf(type, e.getCause(), () -> "the error: " + e.getCause());
    } catch (InterruptedException | TimeoutException e) {
      throw new AssertionError(e);
    }
  }
}
