package io.github.handlestore.bench;

import java.util.concurrent.CompletableFuture;

/** One call of a workload, asynchronous: a cell keeps as many of them in flight as it has tasks. */
@FunctionalInterface
interface Op {
  /**
   * Starts the call; {@code i} is unique to the call within its cell (the Redis writes' keys). The
   * future fails if the call did.
   */
  CompletableFuture<?> call(int i);
}
