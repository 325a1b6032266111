package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.github.handlestore.client.errors.RevisionMismatchException;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.SharedCluster;
import io.github.handlestore.proto.v1.ErrorDetail;
import io.github.handlestore.proto.v1.GetRequest;
import io.github.handlestore.proto.v1.HandlesGrpc;
import io.github.handlestore.proto.v1.PutRequest;
import io.github.handlestore.proto.v1.SubmitRequest;
import io.github.handlestore.proto.v1.Write;
import io.github.handlestore.proto.v1.WriteFailure;
import io.github.handlestore.proto.v1.WritesGrpc;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A real node's errors arrive with their reason through grpc-java's own parsing of the {@code
 * google.rpc.Status} in {@code grpc-status-details-bin} ({@link StatusProto}, then {@link
 * Any#unpack}), and a write's failure inside a Writes.Submit answer carries the same status; the
 * client keeps the reason.
 */
class ErrorDetailsClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  /** The one ErrorDetail of a google.rpc.Status. */
  static ErrorDetail unpacked(com.google.rpc.Status rich) throws InvalidProtocolBufferException {
    assertNotNull(rich, "a google.rpc.Status");
    assertEquals(1, rich.getDetailsCount(), rich.toString());
    assertEquals("type.googleapis.com/handlestore.v1.ErrorDetail", rich.getDetails(0).getTypeUrl());
    return rich.getDetails(0).unpack(ErrorDetail.class);
  }

  @Test
  void aNodesErrorsParseWithStatusProto() throws Exception {
    Cluster cluster = CLUSTER.get();
    try (Client client = cluster.client("java-errors", b -> {})) {
      HandleStore<Cart> carts = client.handleStore("errs", Cart.class).build();
      String id = value(carts.mint(new Cart()));
      long rev = value(carts.getVersioned(id)).orElseThrow().modRevision();
      int leader = cluster.waitLeader(Duration.ofSeconds(30));
      ManagedChannel ch =
          Grpc.newChannelBuilder(cluster.node(leader).addr(), InsecureChannelCredentials.create())
              .build();
      try {
        PutRequest stale =
            PutRequest.newBuilder()
                .setNamespace("java-errors")
                .setStore("errs")
                .setId(id)
                .setValue(ByteString.copyFromUtf8("{}"))
                .setExpectedRevision(rev + 1000)
                .build();
        HandlesGrpc.HandlesBlockingStub handles =
            HandlesGrpc.newBlockingStub(ch).withDeadlineAfter(30, TimeUnit.SECONDS);
        StatusRuntimeException lost =
            assertThrows(StatusRuntimeException.class, () -> handles.put(stale));
        assertEquals(Status.Code.FAILED_PRECONDITION, lost.getStatus().getCode());
        ErrorDetail d = unpacked(StatusProto.fromThrowable(lost));
        assertEquals("revision_mismatch", d.getReason());
        assertEquals(rev, d.getCurrentRevision());

        GetRequest missing =
            GetRequest.newBuilder()
                .setNamespace("java-errors")
                .setStore("errs")
                .setId(Formats.newHandleId(""))
                .build();
        StatusRuntimeException gone =
            assertThrows(StatusRuntimeException.class, () -> handles.get(missing));
        assertEquals(Status.Code.NOT_FOUND, gone.getStatus().getCode());
        assertEquals("not_found", unpacked(StatusProto.fromThrowable(gone)).getReason());

        WriteFailure f =
            WritesGrpc.newBlockingStub(ch)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .submit(
                    SubmitRequest.newBuilder().addWrites(Write.newBuilder().setPut(stale)).build())
                .getResults(0)
                .getFailure();
        com.google.rpc.Status rich = com.google.rpc.Status.parseFrom(f.getDetails());
        assertEquals(f.getCode(), rich.getCode());
        assertEquals(f.getMessage(), rich.getMessage());
        assertEquals(rev, unpacked(rich).getCurrentRevision());
      } finally {
        ch.shutdownNow();
      }

      // The client keeps both (its puts go through Writes.Submit).
      RevisionMismatchException e =
          error(
              RevisionMismatchException.class,
              carts.putWith(id, new Cart(), PutOptions.DEFAULT.withExpectedRevision(rev + 1000)));
      assertEquals(rev, e.currentRevision());
    }
  }
}
