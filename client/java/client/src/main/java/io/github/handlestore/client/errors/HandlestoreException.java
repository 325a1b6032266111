package io.github.handlestore.client.errors;

import io.grpc.Status;
import java.util.Objects;
import java.util.Optional;

/**
 * A refusal: a node's, with the node's reason, code and message (read from the {@code ErrorDetail}
 * it sends with every error), or the client's own for malformed input (an {@link
 * InvalidArgumentException}, before any call) or a call whose deadline passed ({@link
 * CallDeadlineException}).
 *
 * <p>The classes follow the error table (proto/reasons.txt), generated from it at build time: a
 * class per gRPC code ({@link UnavailableException}, {@link NotFoundException}, ...) and, below it,
 * one per reason not named after its code ({@link RevisionMismatchException}, {@link
 * NotLeaderException}, ...). Catch a code's class for every error of that code, a reason's for that
 * reason; {@link #reason()} and {@link #code()} say the same as data. A status of a code the table
 * lacks (UNIMPLEMENTED from an older node) is a plain {@code HandlestoreException}.
 */
public class HandlestoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient Status.Code code;
  private final transient ErrorDetails details;

  /** An error of {@code code}; the subclasses fix it. */
  public HandlestoreException(
      Status.Code code, String message, ErrorDetails details, Throwable cause) {
    super(message, cause);
    this.code = Objects.requireNonNull(code, "code");
    this.details = Objects.requireNonNullElse(details, ErrorDetails.NONE);
  }

  /**
   * The exception for a status a node answered: the class of its reason when the reason travels
   * with this code (a reason this build does not know is kept in {@link #reasonName()} and the
   * code's class is used), else the class of its code.
   */
  public static HandlestoreException of(Status.Code code, String message, ErrorDetails details) {
    return of(code, message, details, null);
  }

  /** {@link #of(Status.Code, String, ErrorDetails)} with a cause. */
  public static HandlestoreException of(
      Status.Code code, String message, ErrorDetails details, Throwable cause) {
    ErrorDetails d = Objects.requireNonNullElse(details, ErrorDetails.NONE);
    Optional<Reason> known = Reason.fromWireName(d.reason());
    if (known.isPresent() && known.get().code() == code) {
      return ErrorTable.ofReason(known.get(), message, d, cause);
    }
    if (known.isPresent()) {
      // A known reason with another code: not the table's pairing, so no reason at all.
      d =
          new ErrorDetails(
              "", d.leaderId(), d.leaderAddress(), d.currentRevision(), d.compactRevision());
    }
    HandlestoreException e = ErrorTable.ofCode(code, message, d, cause);
    return e != null ? e : new HandlestoreException(code, message, d, cause);
  }

  /** The client's own refusal of malformed input (reason invalid_argument), before any call. */
  public static InvalidArgumentException invalid(String message) {
    return new InvalidArgumentException(message, ErrorDetails.of(Reason.INVALID_ARGUMENT), null);
  }

  /** The gRPC status code. */
  public Status.Code code() {
    return code;
  }

  /** The node's reason, if it gave one this build knows (and it travels with {@link #code()}). */
  public Optional<Reason> reason() {
    return Reason.fromWireName(details.reason());
  }

  /** The node's reason as it named it ("" if none): also one this build does not know. */
  public String reasonName() {
    return details.reason();
  }

  /** Everything the node said beside the code and the message. */
  public ErrorDetails details() {
    return details;
  }

  /** For revision_mismatch: the entry's current revision (0: absent). */
  public long currentRevision() {
    return details.currentRevision();
  }

  /** For compacted: the oldest revision the node keeps. */
  public long compactRevision() {
    return details.compactRevision();
  }

  /** The leader's client address the node named ("" if none). */
  public String leaderAddress() {
    return details.leaderAddress();
  }

  @Override
  public String toString() {
    String what = details.reason().isEmpty() ? code.toString() : details.reason();
    return getClass().getName() + ": handlestore: " + what + ": " + getMessage();
  }
}
