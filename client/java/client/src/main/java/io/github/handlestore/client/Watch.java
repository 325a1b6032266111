package io.github.handlestore.client;

import java.util.concurrent.CompletableFuture;

/**
 * The changes to state keys or handles, in revision order with no gaps, from a revision or from
 * now: made by {@link Client#watch}, which completes once a node has established the watch (every
 * later change, or every one from the start revision, is then delivered).
 *
 * <p>A watch whose node stops, whose connection drops, whose node goes quiet, or that its node cut
 * off because its consumer fell behind ({@code slow_watcher}) resumes on another node from the
 * revision after the last one it delivered: its consumer sees every change once, in order. It fails
 * only for what resuming cannot fix: no node takes it within the client's call timeout (that {@code
 * next()} fails with a {@code CallDeadlineException}; the next one tries again), the history moved
 * past it ({@code CompactedException}: read, then watch from the read's revision + 1), or the
 * caller may no longer read what it watches; those last two close it.
 *
 * <p>It is pulled, one {@link #next()} at a time, as the Go client's {@code Next}: the consumer's
 * pace is the watch's pace, an error arrives in order with the batches, and a consumer that stops
 * pulling holds at most 64 responses (then the node stops sending, and cuts it off once its share
 * of the node's watch memory is full: resumed from its position when it pulls again). {@link
 * #blocking()} gives the same watch as an {@code Iterable}. Close it when done
 * (try-with-resources): the stream ends and a waiting {@code next()} fails with {@link
 * WatchClosedException}.
 */
public final class Watch implements AutoCloseable {
  private final Watching watching;

  Watch(Watching watching) {
    this.watching = watching;
  }

  /**
   * The next batch: changes of whole revisions, or with {@link WatchOptions#progress()} a progress
   * notice while nothing changes. One {@code next()} waits at a time (a second one fails with
   * {@link IllegalStateException}). Cancelling the future, or its {@code orTimeout}, leaves the
   * watch usable and loses nothing: what it would have got goes to the next one. After {@link
   * #close()}, or once the watch failed for good, it fails with {@link WatchClosedException}.
   */
  public CompletableFuture<WatchBatch> next() {
    return watching.next();
  }

  /** This watch with a {@code next()} that waits, and as an {@code Iterable}. */
  public BlockingWatch blocking() {
    return new BlockingWatch(this);
  }

  /** The next revision this watch delivers: a later watch resumes from it. */
  public long position() {
    return watching.position();
  }

  /** The endpoint serving the watch now ("host:port"). */
  public String node() {
    return watching.node();
  }

  /** How many times the watch resumed on another stream (a lost node, a cut, a slow consumer). */
  public int resumes() {
    return watching.resumes();
  }

  /** Ends the watch: its stream closes, and a waiting or later {@code next()} fails. */
  @Override
  public void close() {
    watching.close();
  }
}
