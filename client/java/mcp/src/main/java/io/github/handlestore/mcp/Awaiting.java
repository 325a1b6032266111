package io.github.handlestore.mcp;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Waits for a client future where the SDK's seam is synchronous ({@code RequestStateCodec.seal},
 * {@code McpChangeBroadcaster.broadcast}). The client bounds every call by its deadline, so the
 * wait is bounded too; an interrupt cancels the call (which stops its retries) and keeps the flag.
 */
final class Awaiting {
  private Awaiting() {}

  /** The future's value, or its failure as it is (unwrapped); unchecked failures only. */
  static <T> T value(CompletableFuture<T> future) {
    try {
      return future.get();
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new CancellationException("interrupted while waiting for the cluster");
    } catch (ExecutionException e) {
      throw unchecked(e.getCause());
    }
  }

  /** {@code e} with the future's wrappers taken off, as an unchecked exception. */
  static RuntimeException unchecked(Throwable e) {
    Throwable t = e;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    if (t instanceof RuntimeException r) {
      return r;
    }
    if (t instanceof Error err) {
      throw err;
    }
    return new CompletionException(t);
  }
}
