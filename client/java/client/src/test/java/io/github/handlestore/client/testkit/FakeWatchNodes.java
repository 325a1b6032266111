package io.github.handlestore.client.testkit;

import com.google.protobuf.Any;
import io.github.handlestore.proto.v1.ErrorDetail;
import io.github.handlestore.proto.v1.WatchGrpc;
import io.github.handlestore.proto.v1.WatchRequest;
import io.github.handlestore.proto.v1.WatchResponse;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Stand-in nodes serving Watch from a script, for what a real node never does on cue: each watch
 * call, on whichever node, plays the next {@link Stream} (its responses, then its ending, or
 * silence). They keep the requests they got, in order, with the node that got each.
 */
public final class FakeWatchNodes implements AutoCloseable {

  /**
   * One watch call's script.
   *
   * @param responses sent in order
   * @param end then the stream ends with this code and reason (null: it stays open, silent)
   * @param reason the ErrorDetail's reason of a failing end
   */
  public record Stream(List<WatchResponse> responses, Status.Code end, String reason) {}

  /** A request as a node got it. */
  public record Got(int node, WatchRequest request) {}

  private final List<Server> servers = new ArrayList<>();
  private final ConcurrentLinkedQueue<Stream> script = new ConcurrentLinkedQueue<>();
  private final List<Got> got = new CopyOnWriteArrayList<>();

  /** {@code n} nodes on loopback ports, with an empty script (a call then stays silent). */
  public FakeWatchNodes(int n) {
    try {
      for (int i = 0; i < n; i++) {
        int node = i;
        servers.add(
            Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
                .addService(new Service(node))
                .build()
                .start());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The nodes' addresses. */
  public List<String> endpoints() {
    return servers.stream().map(s -> "127.0.0.1:" + s.getPort()).toList();
  }

  /** Adds a call's script. */
  public FakeWatchNodes then(Stream s) {
    script.add(s);
    return this;
  }

  /** The requests the nodes got, in order. */
  public List<Got> got() {
    return List.copyOf(got);
  }

  /** The created answer of a watch at {@code revision}. */
  public static WatchResponse created(long revision) {
    return WatchResponse.newBuilder().setCreated(true).setRevision(revision).build();
  }

  private final class Service extends WatchGrpc.WatchImplBase {
    private final int node;

    Service(int node) {
      this.node = node;
    }

    @Override
    public void watch(WatchRequest req, StreamObserver<WatchResponse> out) {
      got.add(new Got(node, req));
      Stream s = script.poll();
      if (s == null) {
        return;
      }
      s.responses().forEach(out::onNext);
      if (s.end() == null) {
        return;
      }
      if (s.end() == Status.Code.OK) {
        out.onCompleted();
        return;
      }
      com.google.rpc.Status rich =
          com.google.rpc.Status.newBuilder()
              .setCode(s.end().value())
              .setMessage("scripted")
              .addDetails(Any.pack(ErrorDetail.newBuilder().setReason(s.reason()).build()))
              .build();
      out.onError(StatusProto.toStatusRuntimeException(rich));
    }
  }

  @Override
  public void close() {
    servers.forEach(Server::shutdownNow);
    for (Server s : servers) {
      try {
        s.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
