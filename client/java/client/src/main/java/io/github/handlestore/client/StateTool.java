package io.github.handlestore.client;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.handlestore.client.internal.Futures;
import io.github.handlestore.proto.v1.BatchRetrieveRequest;
import io.github.handlestore.proto.v1.BatchStoreRequest;
import io.github.handlestore.proto.v1.ExistsRequest;
import io.github.handlestore.proto.v1.ListRequest;
import io.github.handlestore.proto.v1.Read;
import io.github.handlestore.proto.v1.RetrieveRequest;
import io.github.handlestore.proto.v1.StateDeleteRequest;
import io.github.handlestore.proto.v1.StateGrpc;
import io.github.handlestore.proto.v1.StoreRequest;
import io.github.handlestore.proto.v1.Write;
import io.github.handlestore.proto.v1.WriteResult;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The state tool of a namespace: hierarchical keys ("checkpoints/agent-7/latest") with JSON or byte
 * values, listed by prefix in key order, written in atomic batches, replicated like handles. Values
 * given as objects become JSON through the tool's Jackson mapper; {@code byte[]} values are stored
 * as bytes.
 *
 * <p>As {@link HandleStore}: every method returns a {@link CompletableFuture} (cancelling it stops
 * the call and its retries), malformed keys fail it before any call, and {@link #blocking()} is the
 * same tool with methods that wait. Immutable: the {@code with*} methods give a tool of other
 * settings over the same client.
 */
public final class StateTool {
  private final Client client;
  private final Duration defaultTtl;
  private final Consistency consistency;
  private final Duration timeout;
  private final ObjectMapper mapper;

  StateTool(Client client) {
    this(client, Duration.ZERO, Consistency.LINEARIZABLE, null, JacksonCodec.DEFAULT_MAPPER);
  }

  private StateTool(
      Client client,
      Duration defaultTtl,
      Consistency consistency,
      Duration timeout,
      ObjectMapper mapper) {
    this.client = client;
    this.defaultTtl = defaultTtl;
    this.consistency = consistency;
    this.timeout = timeout;
    this.mapper = mapper;
  }

  /** The same tool whose writes with {@link Ttl#DEFAULT} expire after {@code ttl} (0: never). */
  public StateTool withDefaultTtl(Duration ttl) {
    return new StateTool(client, Objects.requireNonNull(ttl), consistency, timeout, mapper);
  }

  /** The same tool reading at another consistency. */
  public StateTool withConsistency(Consistency c) {
    return new StateTool(client, defaultTtl, Objects.requireNonNull(c), timeout, mapper);
  }

  /** The same tool whose calls each have {@code timeout} instead of the client's call timeout. */
  public StateTool withTimeout(Duration timeout) {
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive");
    }
    return new StateTool(client, defaultTtl, consistency, timeout, mapper);
  }

  /** The same tool with JSON values through {@code mapper}. */
  public StateTool withMapper(ObjectMapper mapper) {
    return new StateTool(client, defaultTtl, consistency, timeout, Objects.requireNonNull(mapper));
  }

  /** This tool with methods that wait for their answer. */
  public BlockingStateTool blocking() {
    return new BlockingStateTool(this);
  }

  private String ns() {
    return client.namespace();
  }

  private static <R> CompletableFuture<R> guard(Supplier<CompletableFuture<R>> body) {
    try {
      return body.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Stores {@code value} with the tool's default TTL; gives the write's revision. */
  public CompletableFuture<Long> store(String key, Object value) {
    return store(key, value, StoreOptions.DEFAULT);
  }

  /** Stores {@code value} (a compare-and-set with an expected revision); gives the revision. */
  public CompletableFuture<Long> store(String key, Object value, StoreOptions options) {
    return guard(
        () -> {
          Formats.checkKey(key);
          StoreRequest.Builder req =
              StoreRequest.newBuilder()
                  .setNamespace(ns())
                  .setKey(key)
                  .setValue(StateValue.of(value, mapper).wire())
                  .setTtl(Ttl.wire(options.ttl(), defaultTtl, false));
          options.expectedRevision().ifPresent(req::setExpectedRevision);
          return Futures.map(
              client.write(w -> Write.newBuilder().setStore(req.setWriteId(w)).build(), timeout),
              r -> HandleStore.kind(r, WriteResult.ResultCase.STORE).getStore().getRevision());
        });
  }

  /** The entry, or empty if the key is absent or expired. */
  public CompletableFuture<Optional<StateEntry>> retrieve(String key) {
    return guard(
        () -> {
          Formats.checkKey(key);
          RetrieveRequest req =
              RetrieveRequest.newBuilder()
                  .setNamespace(ns())
                  .setKey(key)
                  .setRead(consistency.wire())
                  .build();
          return Futures.map(
              client.read(Read.newBuilder().setRetrieve(req).build(), timeout),
              a ->
                  a.retrieve() == null || !a.retrieve().hasEntry()
                      ? Optional.empty()
                      : Optional.of(StateEntry.fromWire(a.retrieve().getEntry())));
        });
  }

  /** The key's JSON value as a {@code type} (through the tool's mapper), or empty if absent. */
  public <T> CompletableFuture<Optional<T>> get(String key, Class<T> type) {
    return Futures.map(retrieve(key), e -> e.map(entry -> entry.value().as(mapper, type)));
  }

  /** Deletes one key; says how many live keys went (0 or 1). */
  public CompletableFuture<Deleted> delete(String key) {
    return delete(key, OptionalLong.empty());
  }

  /** Deletes one key only if it is at {@code expectedRevision}. */
  public CompletableFuture<Deleted> delete(String key, long expectedRevision) {
    return delete(key, OptionalLong.of(expectedRevision));
  }

  private CompletableFuture<Deleted> delete(String key, OptionalLong expected) {
    return guard(
        () -> {
          Formats.checkKey(key);
          StateDeleteRequest.Builder req =
              StateDeleteRequest.newBuilder().setNamespace(ns()).setKey(key);
          expected.ifPresent(req::setExpectedRevision);
          return delete(req);
        });
  }

  /**
   * Deletes up to {@code limit} keys (0: 1000, at most 10000) under a non-empty prefix, atomically;
   * {@link Deleted#more()} says whether keys remain.
   */
  public CompletableFuture<Deleted> deletePrefix(String prefix, int limit) {
    return guard(
        () -> {
          Formats.checkPrefix(prefix);
          if (prefix.isEmpty()) {
            throw io.github.handlestore.client.errors.HandlestoreException.invalid(
                "a prefix delete needs a non-empty prefix");
          }
          if (limit < 0) {
            throw io.github.handlestore.client.errors.HandlestoreException.invalid(
                "a prefix delete's limit must not be negative");
          }
          return delete(
              StateDeleteRequest.newBuilder()
                  .setNamespace(ns())
                  .setKey(prefix)
                  .setPrefix(true)
                  .setLimit(limit));
        });
  }

  private CompletableFuture<Deleted> delete(StateDeleteRequest.Builder req) {
    return Futures.map(
        client.write(w -> Write.newBuilder().setStateDelete(req.setWriteId(w)).build(), timeout),
        r -> {
          var d = HandleStore.kind(r, WriteResult.ResultCase.STATE_DELETE).getStateDelete();
          return new Deleted(d.getDeleted(), d.getMore(), d.getRevision());
        });
  }

  /** One page of the keys under {@code prefix} ("": every key), in key order. */
  public CompletableFuture<ListPage> list(String prefix, ListOptions options) {
    return guard(
        () -> {
          Formats.checkPrefix(prefix);
          Consistency c = options.consistency() != null ? options.consistency() : consistency;
          ListRequest req =
              ListRequest.newBuilder()
                  .setNamespace(ns())
                  .setPrefix(prefix)
                  .setLimit(options.limit())
                  .setPageToken(options.pageToken())
                  .setWithValues(options.withValues())
                  .setRead(c.wire())
                  .build();
          return Futures.map(
              client.call(StateGrpc.getListMethod(), req, timeout),
              r ->
                  new ListPage(
                      r.getEntriesList().stream().map(StateEntry::fromWire).toList(),
                      r.getNextPageToken(),
                      r.getReadRevision()));
        });
  }

  /** Whether the key is live. */
  public CompletableFuture<Boolean> exists(String key) {
    return guard(
        () -> {
          Formats.checkKey(key);
          ExistsRequest req =
              ExistsRequest.newBuilder()
                  .setNamespace(ns())
                  .setKey(key)
                  .setRead(consistency.wire())
                  .build();
          return Futures.map(
              client.call(StateGrpc.getExistsMethod(), req, timeout), r -> r.getExists());
        });
  }

  /**
   * Writes all items or none, in one Raft entry: if any compare-and-set fails, nothing is written.
   * Gives the revision.
   */
  public CompletableFuture<Long> batchStore(List<StoreItem> items) {
    return guard(
        () -> {
          BatchStoreRequest.Builder req = BatchStoreRequest.newBuilder().setNamespace(ns());
          for (StoreItem it : items) {
            Formats.checkKey(it.key());
            var item =
                io.github.handlestore.proto.v1.StoreItem.newBuilder()
                    .setKey(it.key())
                    .setValue(StateValue.of(it.value(), mapper).wire())
                    .setTtl(Ttl.wire(it.options().ttl(), defaultTtl, false));
            it.options().expectedRevision().ifPresent(item::setExpectedRevision);
            req.addItems(item);
          }
          return Futures.map(
              client.write(
                  w -> Write.newBuilder().setBatchStore(req.setWriteId(w)).build(), timeout),
              r ->
                  HandleStore.kind(r, WriteResult.ResultCase.BATCH_STORE)
                      .getBatchStore()
                      .getRevision());
        });
  }

  /** One consistent view of several keys, in the order asked (empty for an absent key). */
  public CompletableFuture<List<Optional<StateEntry>>> batchRetrieve(List<String> keys) {
    return guard(
        () -> {
          keys.forEach(Formats::checkKey);
          BatchRetrieveRequest req =
              BatchRetrieveRequest.newBuilder()
                  .setNamespace(ns())
                  .addAllKeys(keys)
                  .setRead(consistency.wire())
                  .build();
          return Futures.map(
              client.call(StateGrpc.getBatchRetrieveMethod(), req, timeout),
              r ->
                  r.getEntriesList().stream()
                      .map(
                          m ->
                              m.hasEntry()
                                  ? Optional.of(StateEntry.fromWire(m.getEntry()))
                                  : Optional.<StateEntry>empty())
                      .toList());
        });
  }
}
