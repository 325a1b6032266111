package io.github.handlestore.client;

/**
 * The {@link Watch} was closed: by {@link Watch#close()}, or after it failed for good (then the
 * cause is that failure, which its consumer was given first).
 */
public final class WatchClosedException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  WatchClosedException(Throwable cause) {
    super("handlestore: the watch is closed", cause);
  }
}
