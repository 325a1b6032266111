package io.github.handlestore.client.internal;

import io.grpc.Metadata;
import java.time.Duration;

/**
 * Where a retried call goes next, and how long a node asks it to wait ({@link Decision} says
 * whether it is retried).
 */
final class RetryRules {
  /**
   * The metadata a node names the leader's client address under ("host:port"): on UNAVAILABLE
   * answers, and on the answer to a write a follower forwarded (proto/src/meta.rs).
   */
  static final Metadata.Key<String> LEADER_HEADER =
      Metadata.Key.of(Wire.LEADER_HEADER, Metadata.ASCII_STRING_MARSHALLER);

  /** How long a node that refused a call for load asks clients to wait (reason overloaded). */
  static final Metadata.Key<String> PUSHBACK_HEADER =
      Metadata.Key.of(Wire.PUSHBACK_HEADER, Metadata.ASCII_STRING_MARSHALLER);

  private RetryRules() {}

  /** The leader address an answer's metadata names, or "". */
  static String leaderOf(Metadata md) {
    String v = md == null ? null : md.get(LEADER_HEADER);
    return v == null ? "" : v;
  }

  /**
   * The wait a node that refused a call for load asked for (zero if none), at most MAX_PUSHBACK.
   */
  static Duration pushback(Metadata md) {
    String v = md == null ? null : md.get(PUSHBACK_HEADER);
    if (v == null) {
      return Duration.ZERO;
    }
    try {
      long ms = Long.parseLong(v.strip());
      return ms <= 0
          ? Duration.ZERO
          : Duration.ofMillis(Math.min(ms, Wire.MAX_PUSHBACK.toMillis()));
    } catch (NumberFormatException e) {
      return Duration.ZERO;
    }
  }
}
