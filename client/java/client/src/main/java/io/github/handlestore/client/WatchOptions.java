package io.github.handlestore.client;

/**
 * How a {@link Watch} starts and what it delivers.
 *
 * @param startRevision the first revision delivered (inclusive); 0: the changes after now
 * @param progress also deliver batches without changes while nothing changes, with the revision the
 *     watch has reached
 * @param keysOnly leave values out of puts
 */
public record WatchOptions(long startRevision, boolean progress, boolean keysOnly) {
  /** From now, changes only, with values. */
  public static final WatchOptions DEFAULT = new WatchOptions(0, false, false);

  /** Options; a start revision below zero is refused. */
  public WatchOptions {
    if (startRevision < 0) {
      throw new IllegalArgumentException("startRevision must not be negative");
    }
  }

  /** These options from {@code revision} (inclusive; 0: from now). */
  public WatchOptions fromRevision(long revision) {
    return new WatchOptions(revision, progress, keysOnly);
  }

  /** These options with progress notices. */
  public WatchOptions withProgress() {
    return new WatchOptions(startRevision, true, keysOnly);
  }

  /** These options without values. */
  public WatchOptions withKeysOnly() {
    return new WatchOptions(startRevision, progress, true);
  }
}
