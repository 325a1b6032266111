package io.github.handlestore.client.internal;

import io.github.handlestore.client.errors.Reason;
import io.github.handlestore.client.errors.Retry;
import java.util.Locale;
import java.util.Optional;

/**
 * What the client does with a failed call, a write's or read's failure inside a Submit, or a watch
 * stream that failed or would not open: the one rule of proto/vectors/retry.json, which {@link
 * Retrying}, {@link Writes} (for Reads.Submit too) and {@link WatchStream#verdict} all ask.
 *
 * @param retry try the call again on another node after a backoff (a write with the same write id,
 *     so it applies once)
 * @param resume open the watch again on another node from its position
 * @param tls TLS refused the connection: giving up as UNAUTHENTICATED ("TLS: ...") says why, where
 *     retrying could only end in a deadline
 */
record Decision(boolean retry, boolean resume, boolean tls) {
  private static final Decision GIVE_UP = new Decision(false, false, false);
  private static final Decision AGAIN = new Decision(true, true, false);
  private static final Decision TLS_REFUSED = new Decision(false, false, true);

  /** How many causes deep the transport's text is read (a chain is a few links long). */
  private static final int MAX_CAUSES = 16;

  /**
   * The rule. A reason this build knows is the node's word and decides whatever the message says (a
   * {@code leader_unreachable} may quote a peer's TLS error). A reason from a newer node leaves it
   * to the code. A status without a reason was made up by grpc-java or a proxy: its text is checked
   * for a TLS refusal first, then a lost node, connection or stream (UNKNOWN and INTERNAL included,
   * what a reset stream becomes) is tried again. The caller's own cancel or deadline is checked
   * before, never here.
   */
  static Decision of(NodeStatus s) {
    String wireName = s.details().reason();
    Optional<Reason> known = Reason.fromWireName(wireName);
    if (known.isPresent()) {
      Retry r = known.get().retry();
      return new Decision(r == Retry.YES, r != Retry.NO, false);
    }
    if (wireName.isEmpty() && tlsRefused(transportText(s))) {
      return TLS_REFUSED;
    }
    boolean again =
        switch (s.code()) {
          case UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, CANCELLED -> true;
          case UNKNOWN, INTERNAL -> wireName.isEmpty();
          default -> false;
        };
    return again ? AGAIN : GIVE_UP;
  }

  /**
   * Whether {@code text} names a TLS judgement (a certificate rejected, a TLS alert, TLS spoken to
   * a plain port), by proto/wire.txt's markers. A handshake that merely broke off is not one: Netty
   * reports a close mid-handshake as an {@code SSLHandshakeException} too, so an SSL exception in
   * the chain says nothing on its own, and that heals.
   */
  static boolean tlsRefused(String text) {
    String lower = text.toLowerCase(Locale.ROOT);
    return Wire.TLS_REFUSED_MARKERS.stream().anyMatch(lower::contains);
  }

  /**
   * The status's description followed by its cause chain, each cause as its class and message
   * ({@link Throwable#toString}), separated by ": ". grpc-java's description is generic ("ssl
   * exception", "io exception"): the verdict lives in the cause, and its class carries it where its
   * message does not (a {@code CertificateException} for a host name that does not match).
   */
  static String transportText(NodeStatus s) {
    StringBuilder b = new StringBuilder(s.message());
    Throwable t = s.cause();
    for (int depth = 0; t != null && depth < MAX_CAUSES; depth++, t = t.getCause()) {
      b.append(": ").append(t);
    }
    return b.toString();
  }
}
