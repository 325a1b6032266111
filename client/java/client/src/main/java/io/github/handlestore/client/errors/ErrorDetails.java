package io.github.handlestore.client.errors;

import java.util.Objects;

/**
 * What a node said about an error beside its code and message: the {@code ErrorDetail} it sends
 * with every error status (proto/handlestore/v1/common.proto).
 *
 * @param reason the reason as the node named it ("" if it gave none)
 * @param leaderId the leader the node knows of (0: none)
 * @param leaderAddress that leader's client address, "host:port" ("" if none)
 * @param currentRevision for revision_mismatch, the entry's revision (0: absent)
 * @param compactRevision for compacted, the oldest revision the node keeps
 */
public record ErrorDetails(
    String reason,
    long leaderId,
    String leaderAddress,
    long currentRevision,
    long compactRevision) {
  /** No details: what the client's own errors carry. */
  public static final ErrorDetails NONE = new ErrorDetails("", 0, "", 0, 0);

  /** Details with nulls as empty strings. */
  public ErrorDetails {
    reason = Objects.requireNonNullElse(reason, "");
    leaderAddress = Objects.requireNonNullElse(leaderAddress, "");
  }

  /** Details naming only a reason. */
  public static ErrorDetails of(Reason reason) {
    return new ErrorDetails(reason.wireName(), 0, "", 0, 0);
  }
}
