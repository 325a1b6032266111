package io.github.handlestore.client;

import io.github.handlestore.client.internal.Futures;
import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * A {@link Watch} whose {@link #next()} waits, and an {@code Iterable} of its batches that ends
 * when the watch is closed (from another thread, say) and throws what fails it:
 *
 * <pre>{@code
 * try (BlockingWatch w = BlockingWatch.open(client, WatchTarget.prefix("jobs/"), WatchOptions.DEFAULT)) {
 *   for (WatchBatch batch : w) {
 *     batch.changes().forEach(c -> System.out.println(c.kind() + " " + c.key()));
 *   }
 * }
 * }</pre>
 *
 * An interrupt while waiting stops the wait (a {@link CancellationException}, the thread's
 * interrupt flag set again) and loses nothing.
 */
public final class BlockingWatch implements Iterable<WatchBatch>, AutoCloseable {
  private final Watch watch;

  BlockingWatch(Watch watch) {
    this.watch = watch;
  }

  /** Starts a watch and waits until a node established it ({@link Client#watch}). */
  public static BlockingWatch open(Client client, WatchTarget target, WatchOptions options) {
    return Futures.await(client.watch(target, options)).blocking();
  }

  /** The watch this one waits on. */
  public Watch async() {
    return watch;
  }

  /**
   * The next batch, once there is one.
   *
   * @throws WatchClosedException once the watch is closed
   */
  public WatchBatch next() {
    return Futures.await(watch.next());
  }

  /**
   * The next batch, or empty if none came within {@code timeout}: the watch stays usable, and a
   * batch that came just then is the next call's.
   */
  public Optional<WatchBatch> poll(Duration timeout) {
    CompletableFuture<WatchBatch> f = watch.next();
    try {
      return Optional.of(f.get(timeout.toNanos(), TimeUnit.NANOSECONDS));
    } catch (TimeoutException e) {
      return f.cancel(false) ? Optional.empty() : Optional.of(Futures.await(f));
    } catch (ExecutionException e) {
      return Optional.of(Futures.await(f)); // throws its cause
    } catch (InterruptedException e) {
      f.cancel(false);
      Thread.currentThread().interrupt();
      CancellationException c = new CancellationException("handlestore: interrupted");
      c.initCause(e);
      throw c;
    }
  }

  /** The batches until the watch is closed. */
  @Override
  public Iterator<WatchBatch> iterator() {
    return new Iterator<>() {
      private WatchBatch ahead;

      @Override
      public boolean hasNext() {
        if (ahead == null) {
          try {
            ahead = BlockingWatch.this.next();
          } catch (WatchClosedException e) {
            if (e.getCause() instanceof RuntimeException failure) {
              throw failure;
            }
            return false;
          }
        }
        return true;
      }

      @Override
      public WatchBatch next() {
        if (!hasNext()) {
          throw new NoSuchElementException("the watch is closed");
        }
        WatchBatch b = ahead;
        ahead = null;
        return b;
      }
    };
  }

  /** The batches as a sequential stream, until the watch is closed. */
  public Stream<WatchBatch> stream() {
    return StreamSupport.stream(
        Spliterators.spliteratorUnknownSize(iterator(), Spliterator.ORDERED | Spliterator.NONNULL),
        false);
  }

  /** Ends the watch. */
  @Override
  public void close() {
    watch.close();
  }
}
