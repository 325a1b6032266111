package io.github.handlestore.mcp;

import io.github.handlestore.client.Change;
import io.github.handlestore.client.Client;
import io.github.handlestore.client.Formats;
import io.github.handlestore.client.StateTool;
import io.github.handlestore.client.StoreOptions;
import io.github.handlestore.client.WatchBatch;
import io.github.handlestore.client.WatchOptions;
import io.github.handlestore.client.WatchTarget;
import io.modelcontextprotocol.modern.server.feature.McpChangeBroadcaster;
import io.modelcontextprotocol.modern.server.feature.McpChangePublisher;
import io.modelcontextprotocol.modern.server.feature.ServerChange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import reactor.core.publisher.Flux;

/**
 * The modern server's change feed across replicas: an {@link McpChangeBroadcaster} whose {@link
 * #broadcast} is a replicated write, and an {@link McpChangePublisher} whose {@link #changes()}
 * hears, through the cluster's watch, every change broadcast by any replica (in any client
 * language: {@link ChangeLayout} is the shared layout). The SDK's {@code McpChangeFeed} reaches the
 * listeners of its own process only.
 *
 * <p>Wire it with {@code McpServer.builder().subscriptions(feed)} and call {@code
 * feed.broadcast(change)} where the SDK's docs call its feed's. {@link Builder#open()} completes
 * once the feed's watches are established; from then on, a listener the SDK acknowledged hears
 * every change committed after its acknowledgement, once, whatever replica broadcast it and
 * whatever node serves the watch (the watch resumes on another node from its position; a subscriber
 * is registered before the SDK sends the acknowledgement). Open it before the server takes
 * requests, so that a restarted replica serves no listen before its watches stand.
 *
 * <p>Each broadcast costs one replicated write (kept {@link Builder#keep an hour}); each replica
 * holds one watch per prefix, however many listeners it serves.
 */
public final class ClusterChangeFeed
    implements McpChangePublisher, McpChangeBroadcaster, AutoCloseable {
  /** How long a published change's key is kept, as the other clients keep it. */
  public static final Duration KEEP = Duration.ofHours(1);

  private final StateTool state;
  private final Duration keep;
  private final Fanout<ServerChange> fanout = new Fanout<>();
  private final List<WatchPump> pumps = new ArrayList<>();

  private ClusterChangeFeed(Client client, Duration keep) {
    this.state = client.stateTool();
    this.keep = keep;
  }

  /** A feed over {@code client}'s namespace: set it up, then {@link Builder#open()}. */
  public static Builder builder(Client client) {
    return new Builder(client);
  }

  /**
   * Every change committed after the subscription, from any replica; it ends when the feed is
   * closed. Changes of one listener are never dropped for its pace (they wait for its demand).
   */
  @Override
  public Flux<ServerChange> changes() {
    return fanout.flux();
  }

  /**
   * Tells every listener on every replica; returns once the change is committed (waits up to the
   * client's call timeout).
   *
   * @throws IllegalArgumentException for a change other than the SDK's four records
   * @throws io.github.handlestore.client.errors.HandlestoreException if the cluster refused it or
   *     did not answer in time (then no listener hears it)
   */
  @Override
  public void broadcast(ServerChange change) {
    Awaiting.value(publish(change));
  }

  /** {@link #broadcast} without waiting: the revision it was committed at. */
  public CompletableFuture<Long> publish(ServerChange change) {
    try {
      ChangeLayout.Entry entry = ChangeLayout.entryOf(Objects.requireNonNull(change, "change"));
      return state.store(entry.key(), entry.value(), StoreOptions.DEFAULT.withTtl(keep));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The node each of the feed's watches is served by now (in the order they were opened). */
  public List<String> nodes() {
    return pumps.stream().map(WatchPump::node).toList();
  }

  /** How many listeners this replica's feed serves now. */
  public int listeners() {
    return fanout.subscribers();
  }

  /** Stops the watches and ends every subscription. */
  @Override
  public void close() {
    pumps.forEach(WatchPump::close);
    fanout.complete();
  }

  private void deliver(WatchBatch batch, Function<Change, Optional<ServerChange>> meaning) {
    for (Change c : batch.changes()) {
      meaning.apply(c).ifPresent(fanout::emit);
    }
  }

  /** What a feed follows. */
  public static final class Builder {
    private final Client client;
    private Duration keep = KEEP;
    private String followedStore;
    private String uriPrefix;

    private Builder(Client client) {
      this.client = Objects.requireNonNull(client, "client");
    }

    /** How long each published change's key is kept (default an hour; at least a second). */
    public Builder keep(Duration keep) {
      if (keep == null || keep.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException("keep must be at least a second: " + keep);
      }
      this.keep = keep;
      return this;
    }

    /**
     * Also hears every put, delete and expiry of a handle store's handles as {@code
     * ResourceUpdated(uriPrefix + id)}, with nothing to broadcast (a cart's own write is its
     * notification), as the other clients' {@code following_store} / {@code followStore} do.
     */
    public Builder followStore(String store, String uriPrefix) {
      if (!Formats.isName(store)) {
        throw new IllegalArgumentException("not a store name: " + store);
      }
      this.followedStore = store;
      this.uriPrefix = Objects.requireNonNull(uriPrefix, "uriPrefix");
      return this;
    }

    /** Establishes the feed's watches; completes once every one stands. */
    public CompletableFuture<ClusterChangeFeed> open() {
      ClusterChangeFeed feed = new ClusterChangeFeed(client, keep);
      List<CompletableFuture<WatchPump>> opened = new ArrayList<>();
      opened.add(follow(feed, WatchTarget.prefix(ChangeLayout.RESOURCES_PREFIX), false, null));
      opened.add(follow(feed, WatchTarget.prefix(ChangeLayout.LISTS_PREFIX), false, null));
      if (followedStore != null) {
        String prefix = uriPrefix;
        Function<Change, Optional<ServerChange>> handle =
            c -> Optional.of(new ServerChange.ResourceUpdated(prefix + c.key()));
        opened.add(follow(feed, WatchTarget.store(followedStore), true, handle));
      }
      return CompletableFuture.allOf(opened.toArray(CompletableFuture[]::new))
          .handle(
              (v, e) -> {
                opened.stream()
                    .filter(f -> !f.isCompletedExceptionally())
                    .forEach(f -> feed.pumps.add(f.join()));
                if (e != null) {
                  feed.close();
                  throw Awaiting.unchecked(e);
                }
                return feed;
              });
    }

    private CompletableFuture<WatchPump> follow(
        ClusterChangeFeed feed,
        WatchTarget target,
        boolean keysOnly,
        Function<Change, Optional<ServerChange>> meaning) {
      WatchOptions options = keysOnly ? WatchOptions.DEFAULT.withKeysOnly() : WatchOptions.DEFAULT;
      Function<Change, Optional<ServerChange>> m =
          meaning != null ? meaning : ChangeLayout::published;
      return WatchPump.start(client, target, options, batch -> feed.deliver(batch, m));
    }
  }
}
