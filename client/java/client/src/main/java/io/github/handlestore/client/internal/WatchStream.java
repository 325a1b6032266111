package io.github.handlestore.client.internal;

import io.github.handlestore.client.errors.ErrorDetails;
import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.proto.v1.WatchGrpc;
import io.github.handlestore.proto.v1.WatchRequest;
import io.github.handlestore.proto.v1.WatchResponse;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import java.util.ArrayDeque;
import java.util.function.Consumer;

/**
 * One Watch stream on one node, read at its consumer's pace. gRPC is asked for at most {@link
 * #HIGH_WATER} responses beyond those taken, so a consumer that stops taking stops the stream: gRPC
 * stops granting the node HTTP/2 window, the node's share for the watcher fills, and the node cuts
 * it off ({@code slow_watcher}, resumed by the owner) rather than the client buffering without
 * bound. Every method runs in the owner's {@link SynchronizationContext}, where gRPC's callbacks
 * are posted too, so nothing here needs a lock.
 */
public final class WatchStream {
  /** How many responses a stream holds that its consumer has not taken (as the Go client). */
  static final int HIGH_WATER = 64;

  /** What to do after a stream ended, or failed to open. */
  public enum Verdict {
    /** The node went away, stopped, or cut a slow watcher off: resume on the next node. */
    MOVE_ON,
    /** Resuming cannot fix it (compacted, permission denied, a bug): the caller's error. */
    FAIL,
    /** TLS refused the connection (a certificate, an alert): it would fail again. */
    TLS
  }

  private final ClientCall<WatchRequest, WatchResponse> call;
  private final String target;
  private final ArrayDeque<WatchResponse> queue = new ArrayDeque<>();
  private NodeStatus end;
  private boolean cancelled;

  private WatchStream(ClientCall<WatchRequest, WatchResponse> call, String target) {
    this.call = call;
    this.target = target;
  }

  /**
   * Opens {@code request} on endpoint {@code idx}; {@code changed} runs in {@code ctx} whenever a
   * response arrives or the stream ends.
   *
   * @throws IllegalStateException if the client is closed
   */
  public static WatchStream open(
      Conns conns,
      int idx,
      WatchRequest request,
      SynchronizationContext ctx,
      Consumer<WatchStream> changed) {
    ClientCall<WatchRequest, WatchResponse> call =
        conns.channel(idx).newCall(WatchGrpc.getWatchMethod(), CallOptions.DEFAULT);
    WatchStream s = new WatchStream(call, conns.targets().get(idx));
    call.start(s.listener(ctx, changed), conns.headers());
    call.request(HIGH_WATER);
    call.sendMessage(request);
    call.halfClose();
    return s;
  }

  private ClientCall.Listener<WatchResponse> listener(
      SynchronizationContext ctx, Consumer<WatchStream> changed) {
    return new ClientCall.Listener<>() {
      @Override
      public void onMessage(WatchResponse m) {
        ctx.execute(
            () -> {
              queue.add(m);
              changed.accept(WatchStream.this);
            });
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        ctx.execute(
            () -> {
              end = NodeStatus.of(status, trailers);
              changed.accept(WatchStream.this);
            });
      }
    };
  }

  /** The endpoint this stream is on. */
  public String target() {
    return target;
  }

  /** The next response not taken yet, or null; taking one asks gRPC for another. */
  public WatchResponse poll() {
    WatchResponse m = queue.poll();
    if (m != null && end == null && !cancelled) {
      call.request(1);
    }
    return m;
  }

  /** Whether the stream ended and every response it brought was taken. */
  public boolean ended() {
    return end != null && queue.isEmpty();
  }

  /** How the stream ended (after {@link #ended()}). */
  public NodeStatus status() {
    return end;
  }

  /** The client's exception for how the stream ended, naming the node. */
  public HandlestoreException error() {
    return errorOf(target, end);
  }

  /** The client's exception for {@code s}, naming the node {@code target}. */
  public static HandlestoreException errorOf(String target, NodeStatus s) {
    return s.from(target).toException();
  }

  /** Ends the stream (once; nothing after it is delivered). */
  public void cancel() {
    if (!cancelled && end == null) {
      cancelled = true;
      call.cancel("handlestore: the watch moved on", null);
    }
  }

  /**
   * What an ended stream means, the same whether it was being opened or established: the node ended
   * it (status OK), or {@link Decision} resumes on its status (a node or connection lost, a slow
   * watcher cut off): move on; TLS refused the connection: TLS; anything else: fail.
   */
  public static Verdict verdict(NodeStatus s) {
    if (s.code() == Status.Code.OK) {
      return Verdict.MOVE_ON;
    }
    Decision d = Decision.of(s);
    return d.tls() ? Verdict.TLS : d.resume() ? Verdict.MOVE_ON : Verdict.FAIL;
  }

  /** A node lost without a word ({@code message} says how), as an UNAVAILABLE status. */
  public static NodeStatus lost(String message) {
    return new NodeStatus(Status.Code.UNAVAILABLE, message, ErrorDetails.NONE, null, null);
  }
}
