package io.github.handlestore.client;

import io.github.handlestore.client.internal.Check;
import io.github.handlestore.client.internal.Futures;
import io.github.handlestore.client.internal.Reads;
import io.github.handlestore.client.internal.WriteIds;
import io.github.handlestore.client.internal.Writes;
import io.github.handlestore.proto.v1.Read;
import io.github.handlestore.proto.v1.WatchRequest;
import io.github.handlestore.proto.v1.Write;
import io.github.handlestore.proto.v1.WriteId;
import io.github.handlestore.proto.v1.WriteResult;
import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * A connection to a handlestore cluster, safe for concurrent use and meant to be shared: one per
 * application, closed when it stops.
 *
 * <pre>{@code
 * try (Client client = Client.fromEnv()) {   // HANDLESTORE_ENDPOINTS, _NAMESPACE, _CACERT, _TOKEN, ...
 *   HandleStore<Cart> carts = client.handleStore("cart", Cart.class)
 *       .prefix("cart").defaultTtl(Duration.ofHours(1)).build();
 *   String id = carts.blocking().mint(new Cart());
 *   carts.update(id, c -> c.add("sku-1")).join();   // a compare-and-set loop
 * }
 * }</pre>
 *
 * <p>Nodes are dialed lazily, so a client is made while nodes are down; only a malformed config
 * fails. Every call goes to the node believed to lead, follows the leader a refusal names, fails
 * over to the next node with backoff and jitter, and is bounded by its deadline (its own timeout,
 * else {@link ClientConfig.Builder#callTimeout}). Every write carries a write id, the same on every
 * retry, so it is applied once. Concurrent writes share calls of Writes.Submit, and point reads
 * calls of Reads.Submit. Errors are the error table's exceptions ({@link
 * io.github.handlestore.client.errors.HandlestoreException}), never a bare gRPC one.
 */
public final class Client implements AutoCloseable {
  private final Shared shared;
  private final String namespace;
  private final WriteIds ids;

  /** A client of the cluster {@code config} names. */
  public Client(ClientConfig config) {
    this(new Shared(Objects.requireNonNull(config, "config")), config.namespace, new WriteIds());
  }

  private Client(Shared shared, String namespace, WriteIds ids) {
    this.shared = shared;
    this.namespace = namespace;
    this.ids = ids;
  }

  /** A client of the cluster the environment names ({@link ClientConfig#fromEnv()}). */
  public static Client fromEnv() {
    return new Client(ClientConfig.fromEnv().build());
  }

  /**
   * A client of another namespace sharing this one's connections and calls, with its own write ids.
   * Closing either closes both.
   */
  public Client withNamespace(String namespace) {
    Formats.checkNamespace(namespace);
    return new Client(shared, namespace, new WriteIds());
  }

  /** A builder of the handle store named {@code store} ("cart"), with values of {@code type}. */
  public <T> HandleStore.Builder<T> handleStore(String store, Class<T> type) {
    return handleStore(store, JacksonCodec.of(type));
  }

  /** A builder of the handle store named {@code store}, with values through {@code codec}. */
  public <T> HandleStore.Builder<T> handleStore(String store, ValueCodec<T> codec) {
    Formats.checkStore(store);
    return new HandleStore.Builder<>(this, store, Objects.requireNonNull(codec, "codec"));
  }

  /** The state tool of this client's namespace (linearizable reads, no default TTL). */
  public StateTool stateTool() {
    return new StateTool(this);
  }

  /** {@link #watch(WatchTarget, WatchOptions)} from now, changes only, with values. */
  public CompletableFuture<Watch> watch(WatchTarget target) {
    return watch(target, WatchOptions.DEFAULT);
  }

  /**
   * Watches {@code target} in this client's namespace: the future completes once a node has
   * established the watch (within the call timeout), so every later change, or every one from
   * {@code options.startRevision()}, is delivered. A malformed target fails it before any call;
   * compacted history fails it with {@code CompactedException}. The watch opens on the endpoints
   * other than the leader in turn, so watches do not take the leader's time from the writes. See
   * {@link Watch}.
   */
  public CompletableFuture<Watch> watch(WatchTarget target, WatchOptions options) {
    try {
      Objects.requireNonNull(target, "target").check();
      Objects.requireNonNull(options, "options");
      if (shared.conns.isClosed()) {
        throw closed();
      }
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    WatchRequest.Builder req =
        WatchRequest.newBuilder()
            .setNamespace(namespace)
            .setStartRevision(options.startRevision())
            // Always on: progress is how a silent node is told from an idle one.
            .setProgressNotify(true)
            .setKeysOnly(options.keysOnly());
    target.applyTo(req);
    Watching w = new Watching(shared, req.build(), options.progress(), watchNode());
    CompletableFuture<Watch> out = Futures.map(w.start(), v -> new Watch(w));
    // Given up just as it was established: nobody holds the watch, so it closes.
    out.whenComplete(
        (watch, e) -> {
          if (e != null) {
            w.close();
          }
        });
    return out;
  }

  /** The endpoint a new watch opens on: the ones other than the preferred, in turn. */
  private int watchNode() {
    int n = shared.conns.targets().size();
    if (n < 2) {
      return 0;
    }
    int k = Math.floorMod(shared.watchTurns.getAndIncrement(), n - 1);
    return (shared.conns.preferredIndex() + 1 + k) % n;
  }

  /** The request-state key ring of this client's namespace (the admin API's). */
  public KeyRing keyRing() {
    return new KeyRing(this);
  }

  /** The namespace every call of this client uses. */
  public String namespace() {
    return namespace;
  }

  /** The nodes' addresses, as "host:port". */
  public List<String> endpoints() {
    return shared.conns.targets();
  }

  /** The endpoint calls go to first: the leader, once known. */
  public String preferred() {
    return endpoints().get(shared.conns.preferredIndex());
  }

  /** The random id this client's writes are deduplicated under (unsigned). */
  public long clientId() {
    return ids.clientId();
  }

  /** The writes sent and the calls that carried them (of this client and its views). */
  public CallStats writeStats() {
    var c = shared.writes.stats();
    return new CallStats(c.sent(), c.calls());
  }

  /** The point reads sent and the calls that carried them. */
  public CallStats readStats() {
    var c = shared.reads.stats();
    return new CallStats(c.sent(), c.calls());
  }

  /**
   * Calls a unary method of the contract (the generated {@code *Grpc.get*Method()}) with this
   * client's failover, retries, credentials and call timeout, for what the typed API does not cover
   * (admin and auth calls). A write request must carry a write id from {@link #newWriteId()}, the
   * same on a retry.
   */
  public <Q, R> CompletableFuture<R> invoke(MethodDescriptor<Q, R> method, Q request) {
    return shared.calls.invoke(method, request);
  }

  /**
   * A write id of this client's sequence, for a write sent through {@link #invoke}: close it once
   * the write is answered or given up.
   */
  public WriteIds.Ticket newWriteId() {
    return ids.take();
  }

  /**
   * Closes the connections, of this client and of its views: calls in flight end with an error, and
   * later calls are refused ({@link IllegalStateException}).
   */
  @Override
  public void close() {
    shared.close();
  }

  /** Sends one write (built with the write id it is given), alone or with other callers'. */
  CompletableFuture<WriteResult> write(Function<WriteId, Write> build, Duration timeout) {
    if (shared.conns.isClosed()) {
      return CompletableFuture.failedFuture(closed());
    }
    WriteIds.Ticket ticket = ids.take();
    Write w = build.apply(ticket.id());
    return shared.writes.run(new Writes.Queued(w, ticket), w.getSerializedSize(), timeout);
  }

  /** Reads one handle or state key, alone or with other callers' reads. */
  CompletableFuture<Reads.Answer> read(Read r, Duration timeout) {
    if (shared.conns.isClosed()) {
      return CompletableFuture.failedFuture(closed());
    }
    return shared.reads.run(r, r.getSerializedSize(), timeout);
  }

  /** A unary call with failover and retries. */
  <Q, R> CompletableFuture<R> call(MethodDescriptor<Q, R> method, Q request, Duration timeout) {
    if (shared.conns.isClosed()) {
      return CompletableFuture.failedFuture(closed());
    }
    return shared.calls.invoke(method, request, Check.none(), timeout);
  }

  /** The client's call timeout. */
  Duration callTimeoutOf() {
    return shared.calls.callTimeout();
  }

  static IllegalStateException closed() {
    return new IllegalStateException("handlestore: the client is closed");
  }

  /** A value for a future's mapping that is not the node's kind of answer. */
  static IllegalStateException unexpected(String what, Object got) {
    return new IllegalStateException("handlestore: the node answered a " + what + " with " + got);
  }
}
