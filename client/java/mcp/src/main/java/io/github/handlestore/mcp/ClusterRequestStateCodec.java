package io.github.handlestore.mcp;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.RequestStateCodec;
import io.github.handlestore.client.SealMode;
import io.github.handlestore.client.SealOptions;
import io.github.handlestore.client.SingleUse;
import io.modelcontextprotocol.modern.McpException;
import io.modelcontextprotocol.modern.McpSchema.ErrorCodes;
import io.modelcontextprotocol.modern.server.McpRequestContext;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The modern server's {@code RequestStateCodec} (set with {@code
 * McpServer.builder().requestStateCodec(codec)}) on the cluster's replicated key ring, so that MRTR
 * {@code requestState} sealed by one replica opens on every other. The SDK's shipped {@code
 * HmacRequestStateCodec} draws a key per process unless one is configured, never rotates it and
 * lets a blob open as often as it is presented; this one seals with the client's {@link
 * RequestStateCodec} (the {@code v1e.} / {@code v1.} format every handlestore client shares, held
 * to proto/vectors), re-reads the ring while it runs (a rotation reaches every replica without a
 * restart; a retired key stops opening within one refresh interval) and, with {@link
 * Builder#singleUse}, lets each blob open once in the whole cluster (JSDP-1: servers that need
 * at-most-once "must enforce it themselves").
 *
 * <p>A blob is bound to the request's principal (the {@linkplain Builder#principal subject}, ""
 * unless configured, as the SDK's codec binds none by default) and to its method and primitive name
 * ({@code "tools/call:checkout"}), so state sealed for one tool is refused by another.
 *
 * <p>What the SDK does with {@link #open}'s answer: {@code null} becomes the JSON-RPC error -32602
 * "Invalid or expired requestState" (HTTP 400), which its client raises as an {@code McpException}.
 * So every refusal (forged, tampered with, sealed under another ring or a retired key, expired,
 * another principal or tool, garbled, or already redeemed) is {@code null}. An {@code McpException}
 * thrown here reaches the client as it is, logged by the SDK at debug level only; anything else
 * would become -32603 "Internal error" with a stack trace in the server's log. So the one failure
 * that is not a refusal, a redemption the cluster could not record (no quorum within the client's
 * deadline), is an {@code McpException} -32603 saying so; and sealing fails the same way when the
 * cluster cannot be read.
 */
public final class ClusterRequestStateCodec
    implements io.modelcontextprotocol.modern.server.RequestStateCodec {
  private static final System.Logger LOG = System.getLogger("handlestore.mcp");

  private final RequestStateCodec codec;
  private final SingleUse singleUse;
  private final Duration ttl;
  private final Function<McpRequestContext, String> principal;

  private ClusterRequestStateCodec(
      RequestStateCodec codec,
      SingleUse singleUse,
      Duration ttl,
      Function<McpRequestContext, String> principal) {
    this.codec = codec;
    this.singleUse = singleUse;
    this.ttl = ttl;
    this.principal = principal;
  }

  /** A codec over {@code client}'s namespace's key ring: set it up, then {@link Builder#build}. */
  public static Builder builder(Client client) {
    return new Builder(client);
  }

  /** Whether each blob opens once in the whole cluster. */
  public boolean isSingleUse() {
    return singleUse != null;
  }

  @Override
  public String seal(McpRequestContext ctx, String state) {
    CompletableFuture<String> sealed =
        codec.seal(
            Objects.requireNonNull(state, "state"),
            subject(ctx),
            SealOptions.DEFAULT.forTool(binding(ctx)).withTtl(ttl));
    try {
      return Awaiting.value(sealed);
    } catch (RuntimeException e) {
      throw new McpException(
          ErrorCodes.INTERNAL_ERROR, "requestState could not be sealed: " + e.getMessage());
    }
  }

  @Override
  public String open(McpRequestContext ctx, String sealed) {
    if (sealed == null || sealed.isEmpty()) {
      return null;
    }
    Optional<String> state = opened(ctx, sealed);
    if (state.isEmpty() || singleUse == null) {
      return state.orElse(null);
    }
    return redeemed(sealed) ? state.get() : null;
  }

  /** The state, or empty for any refusal (an authentic blob whose state is not a string too). */
  private Optional<String> opened(McpRequestContext ctx, String sealed) {
    try {
      return Awaiting.value(codec.open(sealed, subject(ctx), binding(ctx), String.class));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "handlestore: requestState refused: " + e);
      return Optional.empty();
    }
  }

  /**
   * Records the blob's one redemption: true the first time anywhere, false after; an outcome the
   * cluster could not give is neither, so the request fails with a reason (fail closed).
   */
  private boolean redeemed(String sealed) {
    try {
      boolean first = Awaiting.value(singleUse.redeem(sealed, ttl.plusSeconds(1)));
      if (!first) {
        LOG.log(System.Logger.Level.DEBUG, "handlestore: a redeemed requestState came back");
      }
      return first;
    } catch (RuntimeException e) {
      throw new McpException(
          ErrorCodes.INTERNAL_ERROR,
          "requestState could not be redeemed (its one-time use is recorded in the cluster): "
              + e.getMessage());
    }
  }

  private String subject(McpRequestContext ctx) {
    return Objects.requireNonNullElse(principal.apply(ctx), "");
  }

  /** What a blob is bound to besides its subject: the method, and the tool, prompt or URI. */
  static String binding(McpRequestContext ctx) {
    String name = ctx.primitiveName();
    return name == null ? ctx.method() : ctx.method() + ":" + name;
  }

  /** How a {@link ClusterRequestStateCodec} seals and opens. */
  public static final class Builder {
    private final Client client;
    private SealMode mode = SealMode.ENCRYPTED;
    private Duration ttl = RequestStateCodec.DEFAULT_TTL;
    private Duration refreshEvery = RequestStateCodec.DEFAULT_REFRESH;
    private boolean singleUse;
    private Function<McpRequestContext, String> principal = ctx -> "";

    private Builder(Client client) {
      this.client = Objects.requireNonNull(client, "client");
    }

    /** Encrypted ({@code v1e.}, the default: the client cannot read its state) or signed. */
    public Builder mode(SealMode mode) {
      this.mode = Objects.requireNonNull(mode, "mode");
      return this;
    }

    /** How long a sealed blob opens (default 10 minutes; at least a second). */
    public Builder ttl(Duration ttl) {
      if (ttl == null || ttl.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException("ttl must be at least a second: " + ttl);
      }
      this.ttl = ttl;
      return this;
    }

    /**
     * How often the ring is re-read (default 10 s): the longest a rotated-in key waits to seal and
     * a retired key keeps opening on this replica. A blob under a key not yet cached makes it
     * re-read at once (at most once a second).
     */
    public Builder refreshEvery(Duration every) {
      if (every == null || every.isNegative() || every.isZero()) {
        throw new IllegalArgumentException("refreshEvery must be positive: " + every);
      }
      this.refreshEvery = every;
      return this;
    }

    /** Each blob opens once in the whole cluster (a replay anywhere is refused). */
    public Builder singleUse(boolean on) {
      this.singleUse = on;
      return this;
    }

    /**
     * The principal a blob is sealed for, from the request (for example a user id the transport
     * context carries); a blob opens only for the same one. Default: "" for every request.
     */
    public Builder principal(Function<McpRequestContext, String> principal) {
      this.principal = Objects.requireNonNull(principal, "principal");
      return this;
    }

    /**
     * Reads the ring and gives the codec; fails with {@code NotFoundException} if the namespace has
     * no ring ({@code handlestore keyring create}, or {@code client.keyRing().create()}).
     */
    public CompletableFuture<ClusterRequestStateCodec> build() {
      SingleUse once = singleUse ? new SingleUse(client) : null;
      Duration keep = ttl;
      Function<McpRequestContext, String> who = principal;
      return RequestStateCodec.fromCluster(client, mode, refreshEvery)
          .thenApply(codec -> new ClusterRequestStateCodec(codec, once, keep, who));
    }
  }
}
