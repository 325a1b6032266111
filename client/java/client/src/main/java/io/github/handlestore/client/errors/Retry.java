package io.github.handlestore.client.errors;

/** What the client does on its own with an error of a reason (the error table's "retried"). */
public enum Retry {
  /**
   * The call is retried (on another node, after a backoff), with the same write id for a write,
   * until the call's deadline.
   */
  YES,
  /** The caller gets the error at once. */
  NO,
  /** A watch resumes from the last revision it delivered. */
  RESUME
}
