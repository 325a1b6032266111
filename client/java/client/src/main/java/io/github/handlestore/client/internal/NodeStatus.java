package io.github.handlestore.client.internal;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.github.handlestore.client.errors.ErrorDetails;
import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.client.errors.Reason;
import io.github.handlestore.client.errors.UnauthenticatedException;
import io.github.handlestore.proto.v1.ErrorDetail;
import io.github.handlestore.proto.v1.WriteFailure;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import java.util.Optional;

/**
 * A status as a node answered it: of a call (with its trailers), or of one write or read inside a
 * Submit. The node's {@code ErrorDetail} travels as gRPC's richer error model has it: inside the
 * {@code google.rpc.Status} of the {@code grpc-status-details-bin} trailer (read with grpc-java's
 * {@link StatusProto}), as an {@link Any}; a write's failure carries the same bytes. A node of the
 * previous release sent the bare {@code ErrorDetail} there: still read, for one release, when the
 * first form is not there (proto/vectors/error_details.json holds both).
 *
 * @param trailers of a call (null for a write's status)
 * @param cause what the transport said underneath (null if nothing)
 */
public record NodeStatus(
    Status.Code code, String message, ErrorDetails details, Metadata trailers, Throwable cause) {
  static final Metadata.Key<byte[]> DETAILS_KEY =
      Metadata.Key.of("grpc-status-details-bin", Metadata.BINARY_BYTE_MARSHALLER);

  /** The status of a failed call, from its status and trailers. */
  static NodeStatus of(Status status, Metadata trailers) {
    String message = status.getDescription() == null ? "" : status.getDescription();
    Optional<ErrorDetail> detail = inStatus(status, trailers);
    if (detail.isEmpty() && trailers != null) {
      detail = bare(trailers.get(DETAILS_KEY));
    }
    return new NodeStatus(status.getCode(), message, fields(detail), trailers, status.getCause());
  }

  /** The status a write's (or read's) own method would have answered, inside a Submit. */
  public static NodeStatus ofFailure(WriteFailure f) {
    Status.Code code = Status.fromCodeValue(f.getCode()).getCode();
    return new NodeStatus(code, f.getMessage(), decode(f.getDetails().toByteArray()), null, null);
  }

  /** The ErrorDetail in a write's failure details, in either form; none when there is none. */
  static ErrorDetails decode(byte[] raw) {
    if (raw == null || raw.length == 0) {
      return ErrorDetails.NONE;
    }
    Optional<ErrorDetail> detail;
    try {
      detail = inStatus(com.google.rpc.Status.parseFrom(raw));
    } catch (InvalidProtocolBufferException e) {
      detail = Optional.empty();
    }
    return fields(detail.isPresent() ? detail : bare(raw));
  }

  /** The ErrorDetail of a call's google.rpc.Status, as grpc-java's StatusProto reads it. */
  private static Optional<ErrorDetail> inStatus(Status status, Metadata trailers) {
    if (trailers == null) {
      return Optional.empty();
    }
    try {
      com.google.rpc.Status rich = StatusProto.fromStatusAndTrailers(status, trailers);
      return rich == null ? Optional.empty() : inStatus(rich);
    } catch (IllegalArgumentException e) {
      // Not a google.rpc.Status of this call's code: the previous release's form, or garbage.
      return Optional.empty();
    }
  }

  /** The first ErrorDetail among a google.rpc.Status' details. */
  private static Optional<ErrorDetail> inStatus(com.google.rpc.Status rich) {
    for (Any any : rich.getDetailsList()) {
      if (any.is(ErrorDetail.class)) {
        try {
          return Optional.of(any.unpack(ErrorDetail.class));
        } catch (InvalidProtocolBufferException e) {
          return Optional.empty();
        }
      }
    }
    return Optional.empty();
  }

  /**
   * The previous release's form, a bare ErrorDetail: it always names its reason (a {@code
   * google.rpc.Status} parsed as one never does, its field 1 being a varint where the reason is a
   * string, which protobuf-java keeps as an unknown field).
   */
  private static Optional<ErrorDetail> bare(byte[] raw) {
    if (raw == null) {
      return Optional.empty();
    }
    try {
      ErrorDetail d = ErrorDetail.parseFrom(raw);
      return d.getReason().isEmpty() ? Optional.empty() : Optional.of(d);
    } catch (InvalidProtocolBufferException e) {
      return Optional.empty();
    }
  }

  private static ErrorDetails fields(Optional<ErrorDetail> detail) {
    return detail
        .map(
            d ->
                new ErrorDetails(
                    d.getReason(),
                    d.getLeaderId(),
                    d.getLeaderAddr(),
                    d.getCurrentRevision(),
                    d.getCompactRevision()))
        .orElse(ErrorDetails.NONE);
  }

  /** The client's exception for this status (the table's class of its reason or code). */
  public HandlestoreException toException() {
    return HandlestoreException.of(code, message, details, cause);
  }

  /** The error of a connection TLS refused on {@code target} (UNAUTHENTICATED, "TLS: ..."). */
  public UnauthenticatedException tlsError(String target) {
    return new UnauthenticatedException(
        target + ": TLS: " + message, ErrorDetails.of(Reason.UNAUTHENTICATED), cause);
  }

  /** The same status with {@code prefix} before its message (which node refused). */
  NodeStatus from(String prefix) {
    return new NodeStatus(code, prefix + ": " + message, details, trailers, cause);
  }
}
