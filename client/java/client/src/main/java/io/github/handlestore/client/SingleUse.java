package io.github.handlestore.client;

import io.github.handlestore.client.errors.AlreadyExistsException;
import io.github.handlestore.client.internal.Futures;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * Tokens redeemed once across every replica: SEP-2322 says the one-time redemption of MCP request
 * state must be enforced by the server, and the Java SDK's JSDP-1 leaves it to servers; with
 * several replicas "this replica has seen it" is not enough. A redemption is a create-only mint of
 * a handle whose id is derived from the token ({@link #redeemedId}), in the store the other clients
 * use ({@value #STORE}, in the client's namespace), so replicas in any language refuse each other's
 * redeemed tokens (the shared vectors' "redemptions" hold the ids). It is replicated like every
 * write: a failover never forgets it, and a retry applies it once. Safe for concurrent use.
 */
public final class SingleUse {
  /** The handle store redemptions go to. */
  public static final String STORE = "mcp-redeemed";

  /** The shortest a redemption is kept. */
  static final Duration MIN_TTL = Duration.ofSeconds(1);

  private static final System.Logger LOG = System.getLogger("handlestore");

  private final HandleStore<Boolean> store;

  /** Redemptions recorded in {@code client}'s namespace. */
  public SingleUse(Client client) {
    this.store = client.handleStore(STORE, Boolean.class).build();
  }

  /**
   * The handle id {@code token} is redeemed under: RFC 4648 base32 (upper case, no padding) of the
   * first 16 bytes of its SHA-256.
   */
  public static String redeemedId(String token) {
    try {
      byte[] sum =
          MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
      return Formats.idOf(Arrays.copyOf(sum, 16));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /**
   * Redeems {@code token}: true if this was its first redemption anywhere, false if it was redeemed
   * before. The record is kept for {@code ttl} (at least a second): give the token's remaining
   * lifetime, after which it is refused anyway. A failed future leaves the outcome unknown: treat
   * the token as not redeemed by this call (fail closed).
   */
  public CompletableFuture<Boolean> redeem(String token, Duration ttl) {
    if (token == null) {
      return CompletableFuture.failedFuture(new NullPointerException("token"));
    }
    Duration keep = ttl == null || ttl.compareTo(MIN_TTL) < 0 ? MIN_TTL : ttl;
    CompletableFuture<WriteOutcome> mint = store.mintWithId(redeemedId(token), true, keep);
    CompletableFuture<Boolean> out = new CompletableFuture<>();
    mint.whenComplete(
        (v, e) -> {
          Throwable err = e == null ? null : Futures.unwrap(e);
          if (err == null) {
            out.complete(true);
          } else if (err instanceof AlreadyExistsException) {
            out.complete(false);
          } else {
            out.completeExceptionally(err);
          }
        });
    return Futures.linked(out, mint);
  }

  /**
   * Redeems a blob that opened, kept until a second past its expiry {@code exp} (unix seconds):
   * false, and logged, if the redemption cannot be recorded.
   */
  CompletableFuture<Boolean> redeemOpened(String blob, long exp, long now) {
    Duration left = Duration.ofSeconds(Math.max(exp - now, 0) + 1);
    CompletableFuture<Boolean> r = redeem(blob, left);
    return Futures.linked(
        r.handle(
            (first, e) -> {
              if (e != null) {
                LOG.log(
                    System.Logger.Level.WARNING,
                    "handlestore: request state refused: its redemption could not be recorded: "
                        + Futures.unwrap(e));
                return false;
              }
              return first;
            }),
        r);
  }
}
