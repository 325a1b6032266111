package io.github.handlestore.client;

import io.github.handlestore.client.RequestStateFormat.Opened;
import io.github.handlestore.client.errors.ErrorDetails;
import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.client.errors.Reason;
import io.github.handlestore.client.internal.Futures;
import io.grpc.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * Seals MCP request state (the SDK's {@code requestState}) so that any replica, in any of the
 * client languages, opens what another sealed, with keys from the cluster's replicated {@link
 * KeyRing}; the format is {@link RequestStateFormat}'s, byte for byte the other clients' (the
 * shared vectors hold it). Every key of the ring opens (blobs carry no key id), so a blob stays
 * valid across rotations until its key is retired; the ring is re-read every refresh interval
 * (default 10 s), and at once (at most once a second) when a blob opens under no cached key, so a
 * rotation reaches every replica without a restart and a retired key stops opening within one
 * interval.
 *
 * <p>Opening fails closed: a bad MAC or tag, an expired blob, another subject or tool, or any
 * malformed input gives an empty {@code Optional}, never an error. With {@link #withSingleUse}, a
 * blob opens once in the whole cluster (SEP-2322's one-time redemption). Immutable and safe for
 * concurrent use; {@link #blocking()} gives the same codec with methods that wait.
 */
public final class RequestStateCodec {
  /** How long a sealed blob stays valid by default. */
  public static final Duration DEFAULT_TTL = Duration.ofMinutes(10);

  /** How often the ring is re-read from the cluster by default. */
  public static final Duration DEFAULT_REFRESH = Duration.ofSeconds(10);

  private final SealMode mode;
  private final RingCache ring;
  private final SingleUse singleUse;

  private RequestStateCodec(SealMode mode, RingCache ring, SingleUse singleUse) {
    this.mode = Objects.requireNonNull(mode, "mode");
    this.ring = ring;
    this.singleUse = singleUse;
  }

  /**
   * A codec over fixed keys (tests, a single process); each needs its 32-byte secret.
   *
   * @throws io.github.handlestore.client.errors.InvalidArgumentException if a key has none
   */
  public static RequestStateCodec of(List<RingKey> keys, SealMode mode) {
    return new RequestStateCodec(mode, RingCache.fixed(RequestStateFormat.derive(keys)), null);
  }

  /** {@link #fromCluster(Client, SealMode, Duration)} re-read every 10 seconds. */
  public static CompletableFuture<RequestStateCodec> fromCluster(Client client, SealMode mode) {
    return fromCluster(client, mode, DEFAULT_REFRESH);
  }

  /**
   * A codec over the replicated key ring of {@code client}'s namespace, re-read every {@code
   * refreshEvery}; {@code NotFoundException} if the namespace has no ring yet ({@code handlestore
   * keyring create}, or {@link KeyRing#create()}).
   */
  public static CompletableFuture<RequestStateCodec> fromCluster(
      Client client, SealMode mode, Duration refreshEvery) {
    Objects.requireNonNull(mode, "mode");
    if (refreshEvery == null || refreshEvery.isNegative() || refreshEvery.isZero()) {
      return CompletableFuture.failedFuture(
          new IllegalArgumentException("refreshEvery must be positive"));
    }
    RingCache cache = RingCache.of(client, refreshEvery);
    return Futures.map(
        cache.refresh(),
        keys -> {
          if (keys.stream().noneMatch(RequestStateFormat.Key::primary)) {
            throw HandlestoreException.of(
                Status.Code.NOT_FOUND,
                "namespace "
                    + client.namespace()
                    + " has no key ring: run `handlestore keyring create`",
                ErrorDetails.of(Reason.NOT_FOUND));
          }
          return new RequestStateCodec(mode, cache, null);
        });
  }

  /**
   * The same codec (sharing its ring) whose blobs open once in the whole cluster: {@link #open}
   * opens a blob only the first time, on any replica, and refuses it when the redemption cannot be
   * recorded (fail closed, logged). Null: without single use.
   */
  public RequestStateCodec withSingleUse(SingleUse singleUse) {
    return new RequestStateCodec(mode, ring, singleUse);
  }

  /** How this codec seals. */
  public SealMode mode() {
    return mode;
  }

  /** This codec with methods that wait. */
  public BlockingRequestStateCodec blocking() {
    return new BlockingRequestStateCodec(this);
  }

  /** Re-reads the ring from the cluster now (nothing for fixed keys). */
  public CompletableFuture<Void> refresh() {
    return Futures.map(ring.refresh(), keys -> null);
  }

  /** {@link #seal(Object, String, SealOptions)} for the subject only, valid 10 minutes. */
  public CompletableFuture<String> seal(Object state, String subject) {
    return seal(state, subject, SealOptions.DEFAULT);
  }

  /**
   * Seals {@code state} (anything Jackson writes as JSON; a JSON {@link StateValue} as its text)
   * for {@code subject} and {@code options.tool()}, with the ring's primary key.
   */
  public CompletableFuture<String> seal(Object state, String subject, SealOptions options) {
    if (options == null || subject == null) {
      return CompletableFuture.failedFuture(
          new NullPointerException(options == null ? "options" : "subject"));
    }
    Duration ttl = options.ttl().isZero() ? DEFAULT_TTL : options.ttl();
    long exp = now() + Math.max(ttl.getSeconds(), 1);
    return Futures.map(
        ring.fresh(), keys -> sealWith(keys, state, subject, options.tool(), exp, null));
  }

  /**
   * Opens a blob sealed for {@code subject} and {@code tool} ("" or null: the subject only): the
   * state's JSON text, or empty if the blob is forged, tampered with, expired, for someone else or
   * malformed, and with single use, if it was opened before anywhere or its redemption could not be
   * recorded.
   */
  public CompletableFuture<Optional<String>> open(String blob, String subject, String tool) {
    long now = now();
    String t = Objects.requireNonNullElse(tool, "");
    CompletableFuture<Optional<Opened>> opened = openFresh(blob, subject, t, now);
    if (singleUse == null) {
      return Futures.map(opened, o -> o.map(Opened::state));
    }
    return Futures.compose(
        opened,
        o ->
            o.isEmpty()
                ? CompletableFuture.completedFuture(Optional.<String>empty())
                : Futures.map(
                    singleUse.redeemOpened(blob, o.get().exp(), now),
                    first -> first ? Optional.of(o.get().state()) : Optional.<String>empty()));
  }

  /**
   * {@link #open(String, String, String)} into a {@code type} (through Jackson's default mapper); a
   * state that is not a {@code type} fails the future with {@link ValueCodecException}.
   */
  public <T> CompletableFuture<Optional<T>> open(
      String blob, String subject, String tool, Class<T> type) {
    JacksonCodec<T> codec = JacksonCodec.of(type);
    return Futures.map(
        open(blob, subject, tool),
        s -> s.map(json -> codec.decode(json.getBytes(java.nio.charset.StandardCharsets.UTF_8))));
  }

  /**
   * Seals at a given expiry (unix seconds) and nonce (null: random), with the keys as they are: for
   * the shared vectors.
   */
  public String sealAt(Object state, String subject, String tool, long exp, byte[] nonce) {
    return sealWith(ring.current(), state, subject, tool, exp, nonce);
  }

  /** Opens at a given time (unix seconds), with the keys as they are, never redeeming. */
  public Optional<String> openAt(String blob, String subject, String tool, long now) {
    return RequestStateFormat.open(
            ring.current(), blob, subject, Objects.requireNonNullElse(tool, ""), now)
        .map(Opened::state);
  }

  private String sealWith(
      List<RequestStateFormat.Key> keys,
      Object state,
      String subject,
      String tool,
      long exp,
      byte[] nonce) {
    byte[] json = CanonicalJson.of(state, JacksonCodec.DEFAULT_MAPPER);
    return RequestStateFormat.seal(
        keys,
        mode,
        json,
        Objects.requireNonNull(subject, "subject"),
        Objects.requireNonNullElse(tool, ""),
        exp,
        nonce);
  }

  /**
   * Opens with the ring as re-read every refresh interval, and once more at once (at most once a
   * second) when no cached key opens it, so a new key is known before its first blob is refused.
   */
  private CompletableFuture<Optional<Opened>> openFresh(
      String blob, String subject, String tool, long now) {
    if (subject == null) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    return Futures.compose(
        ring.fresh(),
        keys -> {
          Optional<Opened> o = RequestStateFormat.open(keys, blob, subject, tool, now);
          if (o.isPresent() || !ring.mayRefreshOnMiss()) {
            return CompletableFuture.completedFuture(o);
          }
          return ring.refresh()
              .handle(
                  (k, e) ->
                      e != null
                          ? Optional.<Opened>empty()
                          : RequestStateFormat.open(k, blob, subject, tool, now));
        });
  }

  private static long now() {
    return Instant.now().getEpochSecond();
  }
}
