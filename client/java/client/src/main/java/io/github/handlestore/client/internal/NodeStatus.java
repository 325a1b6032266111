package io.github.handlestore.client.internal;

import com.google.protobuf.InvalidProtocolBufferException;
import io.github.handlestore.client.errors.ErrorDetails;
import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.proto.v1.ErrorDetail;
import io.github.handlestore.proto.v1.WriteFailure;
import io.grpc.Metadata;
import io.grpc.Status;

/**
 * A status as a node answered it: of a call (with its trailers), or of one write or read inside a
 * Submit. The node's {@code ErrorDetail} travels prost-encoded in the {@code
 * grpc-status-details-bin} trailer (not the {@code google.rpc.Status} that name usually holds).
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
    byte[] raw = trailers == null ? null : trailers.get(DETAILS_KEY);
    String message = status.getDescription() == null ? "" : status.getDescription();
    return new NodeStatus(status.getCode(), message, decode(raw), trailers, status.getCause());
  }

  /** The status a write's (or read's) own method would have answered, inside a Submit. */
  public static NodeStatus ofFailure(WriteFailure f) {
    Status.Code code = Status.fromCodeValue(f.getCode()).getCode();
    return new NodeStatus(code, f.getMessage(), decode(f.getDetails().toByteArray()), null, null);
  }

  /** An ErrorDetail's fields; none when there is none or the bytes are not one. */
  static ErrorDetails decode(byte[] raw) {
    if (raw == null || raw.length == 0) {
      return ErrorDetails.NONE;
    }
    try {
      ErrorDetail d = ErrorDetail.parseFrom(raw);
      return new ErrorDetails(
          d.getReason(),
          d.getLeaderId(),
          d.getLeaderAddr(),
          d.getCurrentRevision(),
          d.getCompactRevision());
    } catch (InvalidProtocolBufferException e) {
      return ErrorDetails.NONE;
    }
  }

  /** The client's exception for this status (the table's class of its reason or code). */
  public HandlestoreException toException() {
    return HandlestoreException.of(code, message, details, cause);
  }

  /** The same status with {@code prefix} before its message (which node refused). */
  NodeStatus from(String prefix) {
    return new NodeStatus(code, prefix + ": " + message, details, trailers, cause);
  }
}
