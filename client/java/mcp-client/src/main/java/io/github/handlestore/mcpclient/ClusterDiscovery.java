package io.github.handlestore.mcpclient;

import io.github.handlestore.client.ClientStateStore;
import io.github.handlestore.client.internal.Futures;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.client.McpAsyncClient;
import io.modelcontextprotocol.modern.client.McpSyncClient;
import java.time.Clock;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;

/**
 * The modern client's negotiated server metadata ({@code server/discover}: supported versions,
 * capabilities, instructions) kept in the cluster for as long as the server lets it be cached
 * ({@code ttlMs}), so a restarted process, or the same client on another machine, knows the server
 * without asking it again. The SDK keeps the result in a private per-client cache ({@code
 * DiscoverCache}) that cannot be seeded, so this is asked instead of {@code client.discover()}.
 *
 * <p>Kept under the client's key: {@code server-discover} ({@code {"result": ..., "storedAtMs":
 * ...}}), and, in the layout the other clients share, {@code protocol-version} (the version both
 * sides speak) and {@code server-capabilities}.
 */
public final class ClusterDiscovery {
  /** The field of the whole discover result and when it was stored. */
  public static final String FIELD = "server-discover";

  private static final TypeRef<Map<String, Object>> MAP = new TypeRef<>() {};

  private final ClientStateStore store;
  private final McpJsonMapper json;
  private final Clock clock;

  /** Kept in {@code store}, converted with the SDK's default JSON mapper. */
  public ClusterDiscovery(ClientStateStore store) {
    this(store, McpJsonDefaults.getMapper(), Clock.systemUTC());
  }

  /** With a given mapper and clock (the clock says when a kept result is stale). */
  public ClusterDiscovery(ClientStateStore store, McpJsonMapper json, Clock clock) {
    this.store = Objects.requireNonNull(store, "store");
    this.json = Objects.requireNonNull(json, "json");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** What was kept at {@code storedAtMs} (unix milliseconds). */
  record Kept(Map<String, Object> result, long storedAtMs) {}

  /** The kept result while it is fresh, else {@code client}'s, which is then kept. */
  public Mono<McpSchema.DiscoverResult> discover(McpAsyncClient client) {
    return discover(client::discover);
  }

  /** As {@link #discover(McpAsyncClient)}, waiting. */
  public McpSchema.DiscoverResult discover(McpSyncClient client) {
    return discover(() -> Mono.fromCallable(client::discover)).block();
  }

  /** The kept result while it is fresh, else the one {@code fromServer} gives, which is kept. */
  public Mono<McpSchema.DiscoverResult> discover(
      Supplier<Mono<McpSchema.DiscoverResult>> fromServer) {
    return Mono.fromFuture(this::fresh)
        .flatMap(Mono::justOrEmpty)
        .switchIfEmpty(Mono.defer(fromServer).flatMap(r -> Mono.fromFuture(() -> keep(r))));
  }

  /** The kept result, fresh or not; empty if none was kept. */
  public CompletableFuture<Optional<McpSchema.DiscoverResult>> kept() {
    return Futures.map(
        store.field(FIELD, Kept.class),
        k -> k.map(kept -> json.convertValue(kept.result(), McpSchema.DiscoverResult.class)));
  }

  /** Forgets the kept result (say, after the server changed). */
  public CompletableFuture<Void> forget() {
    return store.clearField(FIELD);
  }

  private CompletableFuture<Optional<McpSchema.DiscoverResult>> fresh() {
    long now = clock.millis();
    return Futures.map(
        store.field(FIELD, Kept.class),
        k ->
            k.filter(kept -> isFresh(kept, now))
                .map(kept -> json.convertValue(kept.result(), McpSchema.DiscoverResult.class)));
  }

  private static boolean isFresh(Kept kept, long now) {
    Object ttl = kept.result() == null ? null : kept.result().get("ttlMs");
    return ttl instanceof Number n && n.longValue() > 0 && now < kept.storedAtMs() + n.longValue();
  }

  private CompletableFuture<McpSchema.DiscoverResult> keep(McpSchema.DiscoverResult result) {
    Map<String, Object> asMap = json.convertValue(result, MAP);
    CompletableFuture<Void> all =
        CompletableFuture.allOf(
            store.setField(FIELD, new Kept(asMap, clock.millis())),
            store.setServerCapabilities(asMap.get("capabilities")),
            spoken(result).map(store::setProtocolVersion).orElseGet(store::clearProtocolVersion));
    return all.thenApply(v -> result);
  }

  /** The version the modern client speaks, if the server lists it. */
  private static Optional<String> spoken(McpSchema.DiscoverResult result) {
    return result.supportedVersions().contains(McpSchema.LATEST_PROTOCOL_VERSION)
        ? Optional.of(McpSchema.LATEST_PROTOCOL_VERSION)
        : Optional.empty();
  }
}
