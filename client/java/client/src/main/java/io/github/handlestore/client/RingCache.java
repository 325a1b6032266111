package io.github.handlestore.client;

import io.github.handlestore.client.RequestStateFormat.Key;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A {@link RequestStateCodec}'s keys: fixed, or the cluster's ring as last read, re-read once it is
 * older than the refresh interval (the cached ring serves until the cluster answers again). One
 * read at a time: callers that need it meanwhile share it.
 */
final class RingCache {
  /** The least time between two reads made because a blob opened under no cached key. */
  private static final Duration MISS_REFRESH = Duration.ofSeconds(1);

  private record Snapshot(List<Key> keys, long fetchedNanos) {}

  private final Client client;
  private final Duration every;
  private final AtomicReference<Snapshot> snapshot;
  private final AtomicReference<CompletableFuture<List<Key>>> reading = new AtomicReference<>();

  private RingCache(Client client, Duration every, List<Key> keys) {
    this.client = client;
    this.every = every;
    this.snapshot = new AtomicReference<>(new Snapshot(keys, System.nanoTime()));
  }

  static RingCache fixed(List<Key> keys) {
    return new RingCache(null, null, List.copyOf(keys));
  }

  /** The ring of {@code client}'s namespace: nothing is read until {@link #refresh()}. */
  static RingCache of(Client client, Duration every) {
    return new RingCache(client, every, List.of());
  }

  /** The keys as they are. */
  List<Key> current() {
    return snapshot.get().keys();
  }

  private Duration age() {
    return Duration.ofNanos(System.nanoTime() - snapshot.get().fetchedNanos());
  }

  /** The keys, read again first if they are older than the interval (kept if that fails). */
  CompletableFuture<List<Key>> fresh() {
    if (client == null || age().compareTo(every) < 0) {
      return CompletableFuture.completedFuture(current());
    }
    return refresh().handle((keys, e) -> e == null ? keys : current());
  }

  /** Whether a blob that opened under no cached key may read the ring again now. */
  boolean mayRefreshOnMiss() {
    return client != null && age().compareTo(MISS_REFRESH) >= 0;
  }

  /** Reads the ring (with secrets) from the cluster, or joins the read under way. */
  CompletableFuture<List<Key>> refresh() {
    if (client == null) {
      return CompletableFuture.completedFuture(current());
    }
    CompletableFuture<List<Key>> mine = new CompletableFuture<>();
    CompletableFuture<List<Key>> running = reading.compareAndExchange(null, mine);
    if (running != null) {
      return running.copy(); // a caller giving up does not end the others' read
    }
    client
        .keyRing()
        .list(true)
        .whenComplete(
            (ring, e) -> {
              try {
                if (e != null) {
                  mine.completeExceptionally(e);
                  return;
                }
                List<Key> keys = RequestStateFormat.derive(ring);
                snapshot.set(new Snapshot(keys, System.nanoTime()));
                mine.complete(keys);
              } catch (RuntimeException x) {
                mine.completeExceptionally(x);
              } finally {
                reading.set(null);
              }
            });
    return mine.copy();
  }
}
