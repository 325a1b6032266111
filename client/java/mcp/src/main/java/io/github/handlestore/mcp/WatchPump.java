package io.github.handlestore.mcp;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.WatchBatch;
import io.github.handlestore.client.WatchOptions;
import io.github.handlestore.client.WatchTarget;
import io.github.handlestore.client.errors.CompactedException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Follows one watch target for as long as it runs, handing each batch on in revision order. The
 * client's watch already resumes on another node from its position (a lost node, a cut connection,
 * a slow-consumer cut), so every change arrives once; what it cannot fix (no node took it within
 * the call timeout, a refusal that closed it) is retried here, a second apart, from the same
 * position, so a replica whose whole cluster was away for a while still misses nothing. Only a
 * history compacted past the position leaves a gap: it goes on from now, and says so in the log.
 */
final class WatchPump implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("handlestore.mcp");
  private static final Executor RETRY_PAUSE =
      CompletableFuture.delayedExecutor(1, TimeUnit.SECONDS);

  private final Client client;
  private final WatchTarget target;
  private final WatchOptions options;
  private final Consumer<WatchBatch> onBatch;
  private volatile io.github.handlestore.client.Watch watch;
  private volatile boolean closed;

  private WatchPump(
      Client client, WatchTarget target, WatchOptions options, Consumer<WatchBatch> onBatch) {
    this.client = client;
    this.target = target;
    this.options = options;
    this.onBatch = onBatch;
  }

  /**
   * Starts following {@code target}; completes once a node has established the watch (every later
   * change is then delivered to {@code onBatch}, on the client's threads, one batch at a time).
   */
  static CompletableFuture<WatchPump> start(
      Client client, WatchTarget target, WatchOptions options, Consumer<WatchBatch> onBatch) {
    WatchPump pump = new WatchPump(client, target, options, onBatch);
    return client
        .watch(target, options)
        .thenApply(
            w -> {
              pump.watch = w;
              pump.pull();
              return pump;
            });
  }

  /** The next revision this pump delivers. */
  long position() {
    return watch.position();
  }

  /** The node serving the watch now ("host:port"). */
  String node() {
    return watch.node();
  }

  /** Pulls batches until one is not there yet, then waits for it without holding a thread. */
  private void pull() {
    while (!closed) {
      CompletableFuture<WatchBatch> next = watch.next();
      if (!next.isDone()) {
        next.whenComplete(
            (b, e) -> {
              if (settle(b, e)) {
                pull();
              }
            });
        return;
      }
      WatchBatch batch = null;
      Throwable error = null;
      try {
        batch = next.join();
      } catch (CompletionException | java.util.concurrent.CancellationException e) {
        error = e;
      }
      if (!settle(batch, error)) {
        return;
      }
    }
  }

  /** Hands a batch on (true: pull the next), or starts over after a failure (false). */
  private boolean settle(WatchBatch batch, Throwable error) {
    if (closed) {
      return false;
    }
    if (error == null) {
      onBatch.accept(batch);
      return true;
    }
    Throwable cause = Awaiting.unchecked(error);
    long from = watch.position();
    if (cause instanceof CompactedException) {
      LOG.log(
          System.Logger.Level.WARNING,
          "handlestore: the watch on "
              + target
              + " fell behind the cluster's history at revision "
              + from
              + "; changes before now are lost to it, it goes on from now");
      from = 0;
    } else {
      LOG.log(
          System.Logger.Level.WARNING,
          "handlestore: the watch on " + target + " stopped (" + cause + "); resuming");
    }
    watch.close();
    reopen(from);
    return false;
  }

  /** Opens the watch again from {@code from} a second from now, until it takes. */
  private void reopen(long from) {
    CompletableFuture.runAsync(() -> {}, RETRY_PAUSE)
        .thenCompose(v -> client.watch(target, options.fromRevision(from)))
        .whenComplete(
            (w, e) -> {
              if (closed) {
                if (w != null) {
                  w.close();
                }
                return;
              }
              if (e != null) {
                LOG.log(
                    System.Logger.Level.WARNING,
                    "handlestore: reopening the watch on " + target + " failed (" + e + ")");
                reopen(Awaiting.unchecked(e) instanceof CompactedException ? 0 : from);
                return;
              }
              watch = w;
              pull();
            });
  }

  @Override
  public void close() {
    closed = true;
    watch.close();
  }
}
