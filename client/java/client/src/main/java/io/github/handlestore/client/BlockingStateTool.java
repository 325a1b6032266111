package io.github.handlestore.client;

import io.github.handlestore.client.internal.Futures;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * A {@link StateTool} whose methods wait for their answer, with the error table's exceptions thrown
 * as they are (an interrupt stops the call, as on {@link BlockingHandleStore}); and {@link #scan},
 * every entry under a prefix, page after page.
 */
public final class BlockingStateTool {
  private final StateTool tool;

  BlockingStateTool(StateTool tool) {
    this.tool = tool;
  }

  /** The asynchronous tool this one waits on. */
  public StateTool async() {
    return tool;
  }

  /** See {@link StateTool#store(String, Object)}. */
  public long store(String key, Object value) {
    return Futures.await(tool.store(key, value));
  }

  /** See {@link StateTool#store(String, Object, StoreOptions)}. */
  public long store(String key, Object value, StoreOptions options) {
    return Futures.await(tool.store(key, value, options));
  }

  /** See {@link StateTool#retrieve}. */
  public Optional<StateEntry> retrieve(String key) {
    return Futures.await(tool.retrieve(key));
  }

  /** See {@link StateTool#get}. */
  public <T> Optional<T> get(String key, Class<T> type) {
    return Futures.await(tool.get(key, type));
  }

  /** See {@link StateTool#delete(String)}. */
  public Deleted delete(String key) {
    return Futures.await(tool.delete(key));
  }

  /** See {@link StateTool#delete(String, long)}. */
  public Deleted delete(String key, long expectedRevision) {
    return Futures.await(tool.delete(key, expectedRevision));
  }

  /** See {@link StateTool#deletePrefix}. */
  public Deleted deletePrefix(String prefix, int limit) {
    return Futures.await(tool.deletePrefix(prefix, limit));
  }

  /** See {@link StateTool#list}. */
  public ListPage list(String prefix, ListOptions options) {
    return Futures.await(tool.list(prefix, options));
  }

  /** See {@link StateTool#exists}. */
  public boolean exists(String key) {
    return Futures.await(tool.exists(key));
  }

  /** See {@link StateTool#batchStore}. */
  public long batchStore(List<StoreItem> items) {
    return Futures.await(tool.batchStore(items));
  }

  /** See {@link StateTool#batchRetrieve}. */
  public List<Optional<StateEntry>> batchRetrieve(List<String> keys) {
    return Futures.await(tool.batchRetrieve(keys));
  }

  /**
   * Every entry under {@code prefix}, read a page at a time as the stream is consumed (later pages
   * at least at the first page's revision, so none misses a write the first saw). A page that fails
   * throws from the stream's operation.
   */
  public Stream<StateEntry> scan(String prefix, ListOptions options) {
    Iterator<StateEntry> it =
        new Iterator<>() {
          private ListOptions next = options;
          private Iterator<StateEntry> page = List.<StateEntry>of().iterator();
          private boolean last;

          @Override
          public boolean hasNext() {
            while (!page.hasNext() && !last) {
              ListPage p = list(prefix, next);
              page = p.entries().iterator();
              last = p.nextPageToken().isEmpty();
              next =
                  next.withPageToken(p.nextPageToken())
                      .withConsistency(Consistency.atLeast(p.readRevision()));
            }
            return page.hasNext();
          }

          @Override
          public StateEntry next() {
            if (!hasNext()) {
              throw new NoSuchElementException();
            }
            return page.next();
          }
        };
    return StreamSupport.stream(
        Spliterators.spliteratorUnknownSize(it, Spliterator.ORDERED), false);
  }
}
