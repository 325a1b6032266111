package io.github.handlestore.client.internal;

import java.util.Optional;

/**
 * Looks into a successful answer for a failure another node could fix (a write of a Submit refused
 * with not_leader): then the attempt counts as failed with that status.
 */
@FunctionalInterface
public interface Check<R> {
  /** No check: an answer is an answer. */
  static <R> Check<R> none() {
    return r -> Optional.empty();
  }

  /** The first failure inside {@code answer} that another node could fix, if any. */
  Optional<NodeStatus> retryableFailure(R answer);
}
