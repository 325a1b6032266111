package io.github.handlestore.client.errors;

import java.time.Duration;

/**
 * The call's deadline (its own, else the client's call timeout) passed while no node could serve
 * it, or the call was retried until then. A write's outcome is unknown: it may have been applied
 * once, never twice. The last error a node gave, if any, is the cause.
 */
public class CallDeadlineException extends DeadlineExceededException {
  private static final long serialVersionUID = 1L;

  private final Duration budget;

  /** The deadline of a call that had {@code budget} passed; {@code last} is the last refusal. */
  public CallDeadlineException(Duration budget, Throwable last) {
    super(
        "deadline of " + budget.toMillis() + " ms exceeded; last error: " + last,
        ErrorDetails.NONE,
        last);
    this.budget = budget;
  }

  /** How long the call had. */
  public Duration budget() {
    return budget;
  }
}
