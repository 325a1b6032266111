package io.github.handlestore.client.internal;

import io.github.handlestore.client.errors.Reason;
import io.github.handlestore.client.errors.Retry;
import io.grpc.Metadata;
import io.grpc.Status;
import java.time.Duration;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.net.ssl.SSLException;

/**
 * Which statuses the client tries again, where it goes next, and how long a node asks it to wait.
 */
final class RetryRules {
  /**
   * The metadata a node names the leader's client address under ("host:port"): on UNAVAILABLE
   * answers, and on the answer to a write a follower forwarded (proto/src/meta.rs).
   */
  static final Metadata.Key<String> LEADER_HEADER =
      Metadata.Key.of("x-handlestore-leader", Metadata.ASCII_STRING_MARSHALLER);

  /** How long a node that refused a call for load asks clients to wait (reason overloaded). */
  static final Metadata.Key<String> PUSHBACK_HEADER =
      Metadata.Key.of("grpc-retry-pushback-ms", Metadata.ASCII_STRING_MARSHALLER);

  /** The most a pushback is honoured. */
  static final Duration MAX_PUSHBACK = Duration.ofSeconds(5);

  private static final Pattern TLS_WORDS =
      Pattern.compile("certificate|handshake|ssl|tls", Pattern.CASE_INSENSITIVE);

  private RetryRules() {}

  /**
   * A TLS handshake that failed (the node's certificate is not from the trusted CA, or it refused
   * ours): it would fail again, so it is not retried.
   */
  static boolean tlsRefused(NodeStatus s) {
    if (s.code() != Status.Code.UNAVAILABLE || !s.details().reason().isEmpty()) {
      return false;
    }
    for (Throwable t = s.cause(); t != null; t = t.getCause()) {
      if (t instanceof SSLException) {
        return true;
      }
    }
    return TLS_WORDS.matcher(s.message()).find();
  }

  /**
   * Worth trying again elsewhere: the node could not serve it now. The error table decides for a
   * known reason; otherwise what a lost node or connection looks like (UNAVAILABLE, a deadline, an
   * abort or cancel, a reset surfacing as UNKNOWN or INTERNAL without a reason).
   */
  static boolean retryable(NodeStatus s) {
    Optional<Reason> reason = Reason.fromWireName(s.details().reason());
    if (reason.isPresent()) {
      return reason.get().retry() == Retry.YES;
    }
    return switch (s.code()) {
      case UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, CANCELLED -> !tlsRefused(s);
      case UNKNOWN, INTERNAL -> s.details().reason().isEmpty();
      default -> false;
    };
  }

  /** The leader address an answer's metadata names, or "". */
  static String leaderOf(Metadata md) {
    String v = md == null ? null : md.get(LEADER_HEADER);
    return v == null ? "" : v;
  }

  /** The wait a node that refused a call for load asked for (zero if none). */
  static Duration pushback(Metadata md) {
    String v = md == null ? null : md.get(PUSHBACK_HEADER);
    if (v == null) {
      return Duration.ZERO;
    }
    try {
      long ms = Long.parseLong(v.strip());
      return ms <= 0 ? Duration.ZERO : Duration.ofMillis(Math.min(ms, MAX_PUSHBACK.toMillis()));
    } catch (NumberFormatException e) {
      return Duration.ZERO;
    }
  }
}
