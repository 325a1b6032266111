package io.github.handlestore.client.internal;

import io.github.handlestore.client.internal.Coalescer.Result;
import io.github.handlestore.proto.v1.SubmitRequest;
import io.github.handlestore.proto.v1.SubmitResponse;
import io.github.handlestore.proto.v1.Write;
import io.github.handlestore.proto.v1.WriteFailure;
import io.github.handlestore.proto.v1.WriteResult;
import io.github.handlestore.proto.v1.WritesGrpc;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Function;

/**
 * Write coalescing: concurrent writes of one client share calls of Writes.Submit ({@link Coalescer}
 * says how). Nothing else changes for a write: it keeps its own write id, gets its own answer or
 * error, and is retried with the others when the call fails in a way another node can fix (the node
 * answers the writes that had already succeeded from its memory of their write ids, so none applies
 * twice).
 */
public final class Writes {
  /** A write and its id, kept until the write is answered. */
  public record Queued(Write write, WriteIds.Ticket ticket) {}

  private Writes() {}

  /** The coalescer of a client's writes. */
  public static Coalescer<Queued, WriteResult> coalescer(
      Calls calls, int maxCalls, ScheduledExecutorService timer) {
    return new Coalescer<>(
        (items, timeout) -> submit(calls, items, timeout),
        "write",
        new Coalescer.Bounds(maxCalls, Wire.MAX_SUBMIT_WRITES, Wire.MAX_SUBMIT_WRITE_BYTES),
        calls.callTimeout(),
        q -> q.ticket().close(),
        timer);
  }

  /** The first failure among {@code results} that another node could fix. */
  static <T> Optional<NodeStatus> firstRetryable(
      List<T> results, Function<T, Optional<WriteFailure>> failure) {
    for (T r : results) {
      Optional<WriteFailure> f = failure.apply(r);
      if (f.isPresent()) {
        NodeStatus s = NodeStatus.ofFailure(f.get());
        if (Decision.of(s).retry()) {
          return Optional.of(s);
        }
      }
    }
    return Optional.empty();
  }

  private static Optional<WriteFailure> failureOf(WriteResult r) {
    return r.hasFailure() ? Optional.of(r.getFailure()) : Optional.empty();
  }

  /** One call of Writes.Submit with failover and retries. */
  static CompletableFuture<List<Result<WriteResult>>> submit(
      Calls calls, List<Queued> items, Duration timeout) {
    SubmitRequest.Builder req = SubmitRequest.newBuilder();
    items.forEach(q -> req.addWrites(q.write()));
    CompletableFuture<SubmitResponse> call =
        calls.invoke(
            WritesGrpc.getSubmitMethod(),
            req.build(),
            resp -> firstRetryable(resp.getResultsList(), Writes::failureOf),
            timeout);
    call.whenComplete((v, e) -> items.forEach(q -> q.ticket().close()));
    return Futures.map(
        call,
        resp -> {
          List<Result<WriteResult>> out = new ArrayList<>(resp.getResultsCount());
          for (WriteResult r : resp.getResultsList()) {
            out.add(
                r.hasFailure()
                    ? Result.failed(NodeStatus.ofFailure(r.getFailure()).toException())
                    : Result.of(r));
          }
          return out;
        });
  }
}
