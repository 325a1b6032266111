package io.github.handlestore.client.testkit;

import com.google.protobuf.Any;
import io.github.handlestore.proto.v1.ErrorDetail;
import io.github.handlestore.proto.v1.GetRequest;
import io.github.handlestore.proto.v1.GetResponse;
import io.github.handlestore.proto.v1.HandlesGrpc;
import io.github.handlestore.proto.v1.StoreResponse;
import io.github.handlestore.proto.v1.SubmitRequest;
import io.github.handlestore.proto.v1.SubmitResponse;
import io.github.handlestore.proto.v1.WriteId;
import io.github.handlestore.proto.v1.WriteResult;
import io.github.handlestore.proto.v1.WritesGrpc;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A stand-in node on a loopback port, for what a real cluster cannot be made to do on cue: refuse
 * every call with a chosen reason (and name a leader, as a node does: the ErrorDetail in the
 * google.rpc.Status of grpc-status-details-bin and the leader in x-handlestore-leader), or answer
 * every write. It counts the calls it gets and keeps the write ids it saw.
 */
public final class FakeNode implements AutoCloseable {
  private static final Metadata.Key<String> LEADER =
      Metadata.Key.of("x-handlestore-leader", Metadata.ASCII_STRING_MARSHALLER);

  private final Server server;
  private final AtomicInteger calls = new AtomicInteger();
  private final List<WriteId> writeIds = new CopyOnWriteArrayList<>();
  private final AtomicInteger cancelled = new AtomicInteger();
  private volatile boolean hang;
  private volatile Status refusal;
  private volatile ErrorDetail detail;

  /** A node that answers every write (until told to refuse). */
  public FakeNode() {
    try {
      server =
          Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
              .addService(new Writes())
              .addService(new Handles())
              .build()
              .start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Its address, "127.0.0.1:port". */
  public String addr() {
    return "127.0.0.1:" + server.getPort();
  }

  /** Refuses every call from now on with {@code code} and an ErrorDetail of {@code reason}. */
  public FakeNode refuse(Status.Code code, String reason, String leaderAddr) {
    detail = ErrorDetail.newBuilder().setReason(reason).setLeaderAddr(leaderAddr).build();
    refusal = Status.fromCode(code).withDescription("refused by a fake node: " + reason);
    return this;
  }

  /** Answers no write from now on, until the caller gives up on it. */
  public FakeNode hang() {
    hang = true;
    return this;
  }

  /** The calls whose caller cancelled them while this node held them. */
  public int cancelled() {
    return cancelled.get();
  }

  /** The calls it got. */
  public int calls() {
    return calls.get();
  }

  /** The write ids of the writes it got, in order. */
  public List<WriteId> writeIds() {
    return List.copyOf(writeIds);
  }

  private boolean refused(StreamObserver<?> out) {
    calls.incrementAndGet();
    Status s = refusal;
    if (s == null) {
      return false;
    }
    Metadata trailers = new Metadata();
    if (!detail.getLeaderAddr().isEmpty()) {
      trailers.put(LEADER, detail.getLeaderAddr());
    }
    com.google.rpc.Status rich =
        com.google.rpc.Status.newBuilder()
            .setCode(s.getCode().value())
            .setMessage(s.getDescription() == null ? "" : s.getDescription())
            .addDetails(Any.pack(detail))
            .build();
    out.onError(StatusProto.toStatusRuntimeException(rich, trailers));
    return true;
  }

  private final class Writes extends WritesGrpc.WritesImplBase {
    @Override
    public void submit(SubmitRequest req, StreamObserver<SubmitResponse> out) {
      req.getWritesList().forEach(w -> writeIds.add(w.getStore().getWriteId()));
      if (hang) {
        calls.incrementAndGet();
        ((io.grpc.stub.ServerCallStreamObserver<SubmitResponse>) out)
            .setOnCancelHandler(cancelled::incrementAndGet);
        return;
      }
      if (refused(out)) {
        return;
      }
      SubmitResponse.Builder resp = SubmitResponse.newBuilder();
      req.getWritesList()
          .forEach(
              w ->
                  resp.addResults(
                      WriteResult.newBuilder()
                          .setStore(StoreResponse.newBuilder().setRevision(7))));
      out.onNext(resp.build());
      out.onCompleted();
    }
  }

  private final class Handles extends HandlesGrpc.HandlesImplBase {
    @Override
    public void get(GetRequest req, StreamObserver<GetResponse> out) {
      if (!refused(out)) {
        out.onNext(
            GetResponse.newBuilder()
                .setValue(com.google.protobuf.ByteString.copyFromUtf8("1"))
                .build());
        out.onCompleted();
      }
    }
  }

  @Override
  public void close() {
    server.shutdownNow();
    try {
      server.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
