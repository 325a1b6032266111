package io.github.handlestore.client;

import java.time.Duration;

/**
 * Time to live, with mcpkit's HandleStore convention (and the other clients'), given as a {@link
 * Duration}:
 *
 * <ul>
 *   <li>positive: the entry expires that long after the write (under a millisecond rounds up to
 *       one: it still expires);
 *   <li>zero ({@link #DEFAULT}): the store's default TTL, whose own zero means never;
 *   <li>negative ({@link #NEVER}): never expires, whatever the default.
 * </ul>
 *
 * <p>Expiry is decided by the cluster (the leader's clock), never by the client.
 */
public final class Ttl {
  /** The store's (or tool's) default TTL. */
  public static final Duration DEFAULT = Duration.ZERO;

  /** Never expires, whatever the default. */
  public static final Duration NEVER = Duration.ofMillis(-1);

  private Ttl() {}

  /** A TTL as the wire's signed milliseconds. */
  static long millis(Duration ttl) {
    if (ttl.isZero()) {
      return 0;
    }
    if (ttl.isNegative()) {
      return -1;
    }
    long ms = ttl.toMillis();
    return ttl.equals(Duration.ofMillis(ms)) ? ms : ms + 1;
  }

  /**
   * The wire's TTL of a write: {@code ttl} under the default {@code def}; {@code keep} the expiry.
   */
  static io.github.handlestore.proto.v1.Ttl wire(Duration ttl, Duration def, boolean keep) {
    return io.github.handlestore.proto.v1.Ttl.newBuilder()
        .setTtlMs(millis(ttl))
        .setDefaultTtlMs(Math.max(millis(def), 0))
        .setKeep(keep)
        .build();
  }
}
