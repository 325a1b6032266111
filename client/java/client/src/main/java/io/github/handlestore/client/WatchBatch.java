package io.github.handlestore.client;

import java.util.List;

/**
 * What one step of a {@link Watch} delivers: the changes of whole revisions, in revision order; or,
 * with {@link WatchOptions#progress()}, none, to say how far the watch has come while nothing
 * changed.
 *
 * @param revision every matching change through this revision has been delivered
 * @param changes the changes (empty for a progress notice)
 */
public record WatchBatch(long revision, List<Change> changes) {
  /** A batch; the list is copied. */
  public WatchBatch {
    changes = List.copyOf(changes);
  }

  /** Whether this is a progress notice (no changes). */
  public boolean isProgress() {
    return changes.isEmpty();
  }
}
