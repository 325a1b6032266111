package io.github.handlestore.client;

import java.util.List;

/**
 * One page of a {@link StateTool#list}.
 *
 * @param entries the keys, in key order
 * @param nextPageToken "" when there are no more keys
 * @param readRevision the revision the page was read at
 */
public record ListPage(List<StateEntry> entries, String nextPageToken, long readRevision) {
  /** A page (its entries copied). */
  public ListPage {
    entries = List.copyOf(entries);
  }
}
