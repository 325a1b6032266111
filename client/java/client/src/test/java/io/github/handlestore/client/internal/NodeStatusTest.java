package io.github.handlestore.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.client.errors.NotLeaderException;
import io.github.handlestore.client.errors.RevisionMismatchException;
import io.github.handlestore.proto.v1.ErrorDetail;
import io.github.handlestore.proto.v1.WriteFailure;
import io.grpc.Metadata;
import io.grpc.Status;
import java.security.cert.CertificateException;
import java.time.Duration;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;

/**
 * A node's status as the node encodes it (proto/src/status_details.rs: the ErrorDetail in the
 * google.rpc.Status of grpc-status-details-bin, the leader also in x-handlestore-leader) becomes
 * the table's exception, and the retry rules read it.
 */
class NodeStatusTest {
  /** A node's details: the status as a google.rpc.Status holding the ErrorDetail. */
  static byte[] details(Status status, ErrorDetail d) {
    return com.google.rpc.Status.newBuilder()
        .setCode(status.getCode().value())
        .setMessage(status.getDescription() == null ? "" : status.getDescription())
        .addDetails(Any.pack(d))
        .build()
        .toByteArray();
  }

  static Metadata trailers(Status status, ErrorDetail d) {
    Metadata md = new Metadata();
    md.put(NodeStatus.DETAILS_KEY, details(status, d));
    if (!d.getLeaderAddr().isEmpty()) {
      md.put(RetryRules.LEADER_HEADER, d.getLeaderAddr());
    }
    return md;
  }

  @Test
  void aNotLeaderNamesTheLeaderAndIsRetried() {
    ErrorDetail d =
        ErrorDetail.newBuilder()
            .setReason("not_leader")
            .setLeaderId(2)
            .setLeaderAddr("10.0.0.2:7001")
            .build();
    Status status = Status.UNAVAILABLE.withDescription("not the leader");
    NodeStatus s = NodeStatus.of(status, trailers(status, d));
    HandlestoreException e = s.toException();
    assertInstanceOf(NotLeaderException.class, e);
    assertEquals("10.0.0.2:7001", e.leaderAddress());
    assertEquals(2, e.details().leaderId());
    assertEquals("not the leader", e.getMessage());
    assertTrue(Decision.of(s).retry());
    assertEquals("10.0.0.2:7001", RetryRules.leaderOf(s.trailers()));
  }

  @Test
  void aWriteFailureInsideASubmitCarriesItsRevision() {
    ErrorDetail d =
        ErrorDetail.newBuilder().setReason("revision_mismatch").setCurrentRevision(42).build();
    WriteFailure f =
        WriteFailure.newBuilder()
            .setCode(Status.Code.FAILED_PRECONDITION.value())
            .setMessage("lost")
            .setDetails(
                ByteString.copyFrom(details(Status.FAILED_PRECONDITION.withDescription("lost"), d)))
            .build();
    NodeStatus s = NodeStatus.ofFailure(f);
    RevisionMismatchException e =
        assertInstanceOf(RevisionMismatchException.class, s.toException());
    assertEquals(42, e.currentRevision());
    assertFalse(Decision.of(s).retry());
  }

  @Test
  void withoutAReasonTheCodeDecides() {
    assertTrue(Decision.of(NodeStatus.of(Status.UNAVAILABLE, new Metadata())).retry());
    assertTrue(Decision.of(NodeStatus.of(Status.DEADLINE_EXCEEDED, null)).retry());
    assertTrue(Decision.of(NodeStatus.of(Status.INTERNAL, null)).retry());
    assertFalse(Decision.of(NodeStatus.of(Status.NOT_FOUND, null)).retry());
    assertFalse(Decision.of(NodeStatus.of(Status.PERMISSION_DENIED, null)).retry());
    Metadata garbage = new Metadata();
    garbage.put(NodeStatus.DETAILS_KEY, new byte[] {(byte) 0xff, 1, 2});
    assertEquals("", NodeStatus.of(Status.UNAVAILABLE, garbage).details().reason());
  }

  /** grpc-java says "ssl exception": the verdict is in the cause chain, read with it. */
  static NodeStatus sslException(Throwable cause) {
    return NodeStatus.of(
        Status.UNAVAILABLE.withDescription("ssl exception").withCause(cause), null);
  }

  @Test
  void aRejectedCertificateIsNotRetried() {
    Decision d = Decision.of(sslException(new SSLHandshakeException("PKIX path building failed")));
    assertTrue(d.tls());
    assertFalse(d.retry());
    assertFalse(d.resume());
  }

  @Test
  void aHostNameMismatchIsToldByTheCausesClass() {
    SSLHandshakeException e = new SSLHandshakeException("No subject alternative names present");
    e.initCause(new CertificateException("No subject alternative names present"));
    assertTrue(Decision.of(sslException(e)).tls());
  }

  @Test
  void aHandshakeThatBrokeOffIsRetried() {
    Decision d =
        Decision.of(
            sslException(
                new SSLHandshakeException(
                    "Connection closed while SSL/TLS handshake was in progress")));
    assertFalse(d.tls());
    assertTrue(d.retry());
  }

  @Test
  void aPushbackIsHonouredUpToItsBound() {
    Metadata md = new Metadata();
    md.put(RetryRules.PUSHBACK_HEADER, "250");
    assertEquals(Duration.ofMillis(250), RetryRules.pushback(md));
    md.put(RetryRules.PUSHBACK_HEADER, "999999");
    assertEquals(Wire.MAX_PUSHBACK, RetryRules.pushback(md));
    assertEquals(Duration.ZERO, RetryRules.pushback(new Metadata()));
  }
}
