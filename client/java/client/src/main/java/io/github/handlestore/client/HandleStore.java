package io.github.handlestore.client;

import com.google.protobuf.ByteString;
import io.github.handlestore.client.internal.Futures;
import io.github.handlestore.proto.v1.DeleteRequest;
import io.github.handlestore.proto.v1.GetRequest;
import io.github.handlestore.proto.v1.HandlesGrpc;
import io.github.handlestore.proto.v1.LenRequest;
import io.github.handlestore.proto.v1.MintRequest;
import io.github.handlestore.proto.v1.PutRequest;
import io.github.handlestore.proto.v1.Read;
import io.github.handlestore.proto.v1.Write;
import io.github.handlestore.proto.v1.WriteResult;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * A replicated store of opaque handles (a cart, a job, a draft) named by kind, with values of type
 * {@code T} (JSON through Jackson by default) and mcpkit's HandleStore semantics: mint, put, get,
 * delete, len, and {@link #update} as a compare-and-set loop. TTLs follow {@link Ttl}'s rule
 * (positive: that TTL; zero: the store's default; negative: never). A handle minted through one
 * client is read from any other, on any node.
 *
 * <p>Every method returns at once with a {@link CompletableFuture}; {@link #blocking()} is the same
 * store with methods that wait. A future fails with the error table's exceptions ({@link
 * io.github.handlestore.client.errors}): malformed ids as {@code InvalidArgumentException} before
 * any call, a node's refusal with its reason, a call that ran out of time as {@code
 * CallDeadlineException}. Cancelling a future, or completing it with {@code orTimeout}, stops the
 * call and its retries at once. Safe for concurrent use.
 */
public final class HandleStore<T> {
  private final Client client;
  private final String store;
  private final String prefix;
  private final Duration defaultTtl;
  private final Consistency consistency;
  private final Duration timeout;
  private final ValueCodec<T> codec;
  private final AtomicBoolean closed;

  private HandleStore(
      Client client,
      String store,
      String prefix,
      Duration defaultTtl,
      Consistency consistency,
      Duration timeout,
      ValueCodec<T> codec,
      AtomicBoolean closed) {
    this.client = client;
    this.store = store;
    this.prefix = prefix;
    this.defaultTtl = defaultTtl;
    this.consistency = consistency;
    this.timeout = timeout;
    this.codec = codec;
    this.closed = closed;
  }

  /** Shapes a {@link HandleStore}: made by {@link Client#handleStore}. */
  public static final class Builder<T> {
    private final Client client;
    private final String store;
    private final ValueCodec<T> codec;
    private String prefix = "";
    private Duration defaultTtl = Duration.ZERO;
    private Consistency consistency = Consistency.LINEARIZABLE;

    Builder(Client client, String store, ValueCodec<T> codec) {
      this.client = client;
      this.store = store;
      this.codec = codec;
    }

    /** Minted ids are {@code <prefix>-<26 chars>} ("" for none). */
    public Builder<T> prefix(String prefix) {
      this.prefix = Objects.requireNonNullElse(prefix, "");
      return this;
    }

    /** The TTL of writes with {@link Ttl#DEFAULT} (zero: never expires). */
    public Builder<T> defaultTtl(Duration ttl) {
      this.defaultTtl = Objects.requireNonNull(ttl, "ttl");
      return this;
    }

    /** The consistency of get and len (default {@link Consistency#LINEARIZABLE}). */
    public Builder<T> consistency(Consistency c) {
      this.consistency = Objects.requireNonNull(c, "consistency");
      return this;
    }

    /** The store. */
    public HandleStore<T> build() {
      if (!prefix.isEmpty() && !Formats.isName(prefix)) {
        throw io.github.handlestore.client.errors.HandlestoreException.invalid(
            "id prefix "
                + Formats.shown(prefix)
                + " may only contain A-Z a-z 0-9 _ - . (1-64 bytes)");
      }
      return new HandleStore<>(
          client, store, prefix, defaultTtl, consistency, null, codec, new AtomicBoolean());
    }
  }

  /** The same store read with another consistency. */
  public HandleStore<T> withConsistency(Consistency c) {
    return new HandleStore<>(
        client, store, prefix, defaultTtl, Objects.requireNonNull(c), timeout, codec, closed);
  }

  /**
   * The same store whose calls each have {@code timeout} (across retries and failover) instead of
   * the client's call timeout.
   */
  public HandleStore<T> withTimeout(Duration timeout) {
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive");
    }
    return new HandleStore<>(
        client, store, prefix, defaultTtl, consistency, timeout, codec, closed);
  }

  /** This store with methods that wait for their answer. */
  public BlockingHandleStore<T> blocking() {
    return new BlockingHandleStore<>(this);
  }

  /** The store's name. */
  public String store() {
    return store;
  }

  /** Refuses further calls on this store and its views (the client stays open). */
  public void close() {
    closed.set(true);
  }

  /** {@code body}'s future; what it throws before any call (bad input) as a failed future. */
  private <R> CompletableFuture<R> guard(Supplier<CompletableFuture<R>> body) {
    try {
      if (closed.get()) {
        throw new IllegalStateException("handlestore: the handle store " + store + " is closed");
      }
      return body.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private ByteString encode(T value) {
    return ByteString.copyFrom(codec.encode(Objects.requireNonNull(value, "value")));
  }

  /** Stores {@code value} under a fresh id with the store's default TTL; gives the id. */
  public CompletableFuture<String> mint(T value) {
    return mint(value, Ttl.DEFAULT);
  }

  /** Stores {@code value} under a fresh id; gives the id. */
  public CompletableFuture<String> mint(T value, Duration ttl) {
    String id = Formats.newHandleId(prefix);
    return Futures.map(mintWithId(id, value, ttl), out -> id);
  }

  /**
   * Mints under a caller-chosen id ({@code AlreadyExistsException} if it is live under another
   * write).
   */
  public CompletableFuture<WriteOutcome> mintWithId(String id, T value, Duration ttl) {
    return guard(
        () -> {
          Formats.checkHandleId(id);
          MintRequest.Builder req =
              MintRequest.newBuilder()
                  .setNamespace(client.namespace())
                  .setStore(store)
                  .setId(id)
                  .setValue(encode(value))
                  .setTtl(Ttl.wire(ttl, defaultTtl, false));
          return Futures.map(
              client.write(w -> Write.newBuilder().setMint(req.setWriteId(w)).build(), timeout),
              r ->
                  new WriteOutcome(
                      false, kind(r, WriteResult.ResultCase.MINT).getMint().getRevision()));
        });
  }

  /** An upsert with the store's default TTL; says whether a live handle existed before. */
  public CompletableFuture<Boolean> put(String id, T value) {
    return put(id, value, Ttl.DEFAULT);
  }

  /** An upsert; says whether a live handle existed before. */
  public CompletableFuture<Boolean> put(String id, T value, Duration ttl) {
    return Futures.map(putWith(id, value, PutOptions.DEFAULT.withTtl(ttl)), WriteOutcome::existed);
  }

  /**
   * An upsert, or with an expected revision a compare-and-set ({@code RevisionMismatchException} if
   * the handle changed, {@code NotFoundException} if it is gone).
   */
  public CompletableFuture<WriteOutcome> putWith(String id, T value, PutOptions options) {
    return guard(
        () ->
            put(
                id,
                value,
                Ttl.wire(options.ttl(), defaultTtl, false),
                options.expectedRevision(),
                timeout));
  }

  private CompletableFuture<WriteOutcome> put(
      String id,
      T value,
      io.github.handlestore.proto.v1.Ttl ttl,
      OptionalLong expected,
      Duration within) {
    Formats.checkHandleId(id);
    PutRequest.Builder req =
        PutRequest.newBuilder()
            .setNamespace(client.namespace())
            .setStore(store)
            .setId(id)
            .setValue(encode(value))
            .setTtl(ttl);
    expected.ifPresent(req::setExpectedRevision);
    return Futures.map(
        client.write(w -> Write.newBuilder().setPut(req.setWriteId(w)).build(), within),
        r -> {
          var put = kind(r, WriteResult.ResultCase.PUT).getPut();
          return new WriteOutcome(put.getExisted(), put.getRevision());
        });
  }

  /** The value, or empty if the handle is absent or expired. */
  public CompletableFuture<Optional<T>> get(String id) {
    return Futures.map(getVersioned(id), v -> v.map(Versioned::value));
  }

  /** The value with its revisions, or empty if the handle is absent or expired. */
  public CompletableFuture<Optional<Versioned<T>>> getVersioned(String id) {
    return guard(() -> getAt(id, consistency, timeout));
  }

  private CompletableFuture<Optional<Versioned<T>>> getAt(
      String id, Consistency c, Duration within) {
    Formats.checkHandleId(id);
    GetRequest req =
        GetRequest.newBuilder()
            .setNamespace(client.namespace())
            .setStore(store)
            .setId(id)
            .setRead(c.wire())
            .build();
    return Futures.map(
        client.read(Read.newBuilder().setGet(req).build(), within),
        a -> {
          if (a.get() == null) {
            return Optional.empty();
          }
          var g = a.get();
          T value = codec.decode(g.getValue().toByteArray());
          return Optional.of(
              new Versioned<>(
                  value, g.getCreateRevision(), g.getModRevision(), g.getExpiresAtMs()));
        });
  }

  /** Deletes; says whether a live handle existed. */
  public CompletableFuture<Boolean> delete(String id) {
    return Futures.map(delete(id, OptionalLong.empty()), WriteOutcome::existed);
  }

  /** Deletes only if the handle is at {@code expectedRevision}. */
  public CompletableFuture<WriteOutcome> deleteWith(String id, long expectedRevision) {
    return delete(id, OptionalLong.of(expectedRevision));
  }

  private CompletableFuture<WriteOutcome> delete(String id, OptionalLong expected) {
    return guard(
        () -> {
          Formats.checkHandleId(id);
          DeleteRequest.Builder req =
              DeleteRequest.newBuilder().setNamespace(client.namespace()).setStore(store).setId(id);
          expected.ifPresent(req::setExpectedRevision);
          return Futures.map(
              client.write(w -> Write.newBuilder().setDelete(req.setWriteId(w)).build(), timeout),
              r -> {
                var d = kind(r, WriteResult.ResultCase.DELETE).getDelete();
                return new WriteOutcome(d.getExisted(), d.getRevision());
              });
        });
  }

  /** The number of live (unexpired) handles in the store. */
  public CompletableFuture<Long> len() {
    return guard(
        () -> {
          LenRequest req =
              LenRequest.newBuilder()
                  .setNamespace(client.namespace())
                  .setStore(store)
                  .setRead(consistency.wire())
                  .build();
          return Futures.map(
              client.call(HandlesGrpc.getLenMethod(), req, timeout), r -> r.getLen());
        });
  }

  /**
   * A read-modify-write without lost updates: reads the value, calls {@code fn} for the new one,
   * and writes it back only if nobody wrote in between, else tries again ({@code fn} may run
   * several times, on the client's threads: keep it quick and free of side effects; an exception
   * from it ends the update with that exception). The handle keeps its expiry. Gives the value
   * written, or empty if the handle is absent. The whole loop is bounded by the store's timeout.
   */
  public CompletableFuture<Optional<T>> update(String id, UnaryOperator<T> fn) {
    return guard(
        () -> {
          Formats.checkHandleId(id);
          Objects.requireNonNull(fn, "fn");
          Duration budget = timeout != null ? timeout : client.callTimeoutOf();
          return new UpdateLoop<>(this, id, fn, budget).start();
        });
  }

  // For UpdateLoop.
  CompletableFuture<Optional<Versioned<T>>> read(String id, Consistency c, Duration within) {
    return getAt(id, c, within);
  }

  CompletableFuture<WriteOutcome> writeBack(String id, T value, long revision, Duration within) {
    return put(
        id, value, Ttl.wire(Ttl.DEFAULT, defaultTtl, true), OptionalLong.of(revision), within);
  }

  /** {@code r}, if it is the kind of answer asked for. */
  static WriteResult kind(WriteResult r, WriteResult.ResultCase want) {
    if (r.getResultCase() != want) {
      throw Client.unexpected(want.name().toLowerCase(java.util.Locale.ROOT), r.getResultCase());
    }
    return r;
  }
}
