package io.github.handlestore.client.internal;

import io.github.handlestore.client.errors.BatchFullException;
import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.client.errors.NotFoundException;
import io.github.handlestore.client.internal.Coalescer.Result;
import io.github.handlestore.proto.v1.GetResponse;
import io.github.handlestore.proto.v1.HandlesGrpc;
import io.github.handlestore.proto.v1.Read;
import io.github.handlestore.proto.v1.ReadResult;
import io.github.handlestore.proto.v1.ReadsGrpc;
import io.github.handlestore.proto.v1.ReadsRequest;
import io.github.handlestore.proto.v1.ReadsResponse;
import io.github.handlestore.proto.v1.RetrieveResponse;
import io.github.handlestore.proto.v1.StateGrpc;
import io.github.handlestore.proto.v1.WriteFailure;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Read coalescing, as the other clients': concurrent point reads of one client (handle gets, state
 * retrieves) share calls of Reads.Submit. A lone read goes at once on its own method (Handles.Get,
 * State.Retrieve); under load the reads queued meanwhile leave in one Reads.Submit. Each read is
 * served exactly as its own method would serve it. A read the node left unserved because the
 * response was full (batch_full) goes again in the next call; a node without the Reads service gets
 * each read on its own method.
 */
public final class Reads {
  /** A read's response; both null if the handle or key is absent or expired. */
  public record Answer(GetResponse get, RetrieveResponse retrieve) {
    static final Answer ABSENT = new Answer(null, null);
  }

  private Reads() {}

  /** The coalescer of a client's point reads. */
  public static Coalescer<Read, Answer> coalescer(
      Calls calls, int maxCalls, ScheduledExecutorService timer) {
    return new Coalescer<>(
        (items, timeout) -> submit(calls, items, timeout),
        "read",
        new Coalescer.Bounds(maxCalls, Wire.MAX_SUBMIT_READS, Wire.MAX_SUBMIT_READ_BYTES),
        calls.callTimeout(),
        r -> {},
        timer);
  }

  /** A read on its own method; absent (not an error) if the handle or key is. */
  static CompletableFuture<Answer> readOne(Calls calls, Read r, Duration timeout) {
    CompletableFuture<Answer> answer;
    if (r.hasGet()) {
      answer =
          Futures.map(
              calls.invoke(HandlesGrpc.getGetMethod(), r.getGet(), Check.none(), timeout),
              g -> new Answer(g, null));
    } else if (r.hasRetrieve()) {
      answer =
          Futures.map(
              calls.invoke(StateGrpc.getRetrieveMethod(), r.getRetrieve(), Check.none(), timeout),
              g -> new Answer(null, g));
    } else {
      throw new IllegalArgumentException("a read names no operation");
    }
    CompletableFuture<Answer> out =
        answer.handle(
            (a, e) -> {
              Throwable err = e == null ? null : Futures.unwrap(e);
              if (err instanceof NotFoundException) {
                return Answer.ABSENT;
              }
              if (err != null) {
                throw new CompletionException(err);
              }
              return a;
            });
    return Futures.linked(out, answer);
  }

  /** One read's answer inside a Reads.Submit answer. */
  static Result<Answer> answerOf(ReadResult r) {
    if (r.hasFailure()) {
      Throwable e = NodeStatus.ofFailure(r.getFailure()).toException();
      return e instanceof NotFoundException ? Result.of(Answer.ABSENT) : Result.failed(e);
    }
    Answer a = new Answer(r.hasGet() ? r.getGet() : null, r.hasRetrieve() ? r.getRetrieve() : null);
    if (a.get() == null && a.retrieve() == null) {
      return Result.failed(new IllegalStateException("handlestore: an empty read result"));
    }
    return Result.of(a);
  }

  private static Optional<WriteFailure> failureOf(ReadResult r) {
    return r.hasFailure() ? Optional.of(r.getFailure()) : Optional.empty();
  }

  /** One call of Reads.Submit with failover and retries. */
  static CompletableFuture<List<Result<Answer>>> submitOnce(
      Calls calls, List<Read> reads, Duration timeout) {
    CompletableFuture<ReadsResponse> call =
        calls.invoke(
            ReadsGrpc.getSubmitMethod(),
            ReadsRequest.newBuilder().addAllReads(reads).build(),
            resp -> Writes.firstRetryable(resp.getResultsList(), Reads::failureOf),
            timeout);
    CompletableFuture<List<Result<Answer>>> out = Futures.linked(new CompletableFuture<>(), call);
    call.whenComplete(
        (resp, e) -> {
          Throwable err = e == null ? null : Futures.unwrap(e);
          if (err instanceof HandlestoreException h && h.code() == Status.Code.UNIMPLEMENTED) {
            CompletableFuture<List<Result<Answer>>> each = oneByOne(calls, reads, timeout);
            Futures.linked(out, each);
            each.whenComplete((v, x) -> Futures.complete(out, v, x));
          } else if (err != null) {
            out.completeExceptionally(err);
          } else if (resp.getResultsCount() != reads.size()) {
            out.completeExceptionally(
                new IllegalStateException("handlestore: the node answered a batch of reads short"));
          } else {
            out.complete(resp.getResultsList().stream().map(Reads::answerOf).toList());
          }
        });
    return out;
  }

  /** {@code f}'s answer or error as a result (ending it before {@code f} cancels {@code f}). */
  static CompletableFuture<Result<Answer>> settled(CompletableFuture<Answer> f) {
    return Futures.linked(
        f.handle((a, e) -> e == null ? Result.of(a) : Result.<Answer>failed(Futures.unwrap(e))), f);
  }

  /** Each read on its own method (a node older than Reads.Submit). */
  private static CompletableFuture<List<Result<Answer>>> oneByOne(
      Calls calls, List<Read> reads, Duration timeout) {
    List<CompletableFuture<Result<Answer>>> each = new ArrayList<>();
    for (Read r : reads) {
      each.add(settled(readOne(calls, r, timeout)));
    }
    return CompletableFuture.allOf(each.toArray(CompletableFuture[]::new))
        .thenApply(v -> each.stream().map(CompletableFuture::join).toList());
  }

  /** One read alone on its own method; several in calls of Reads.Submit until each is answered. */
  static CompletableFuture<List<Result<Answer>>> submit(
      Calls calls, List<Read> reads, Duration timeout) {
    if (reads.size() == 1) {
      return Futures.map(settled(readOne(calls, reads.get(0), timeout)), List::of);
    }
    List<Result<Answer>> answers = new ArrayList<>(Collections.nCopies(reads.size(), null));
    List<Integer> pending = new ArrayList<>();
    for (int i = 0; i < reads.size(); i++) {
      pending.add(i);
    }
    return rounds(calls, reads, timeout, answers, pending);
  }

  private static CompletableFuture<List<Result<Answer>>> rounds(
      Calls calls,
      List<Read> reads,
      Duration timeout,
      List<Result<Answer>> answers,
      List<Integer> pending) {
    if (pending.isEmpty()) {
      return CompletableFuture.completedFuture(List.copyOf(answers));
    }
    List<Read> batch = pending.stream().map(reads::get).toList();
    return Futures.compose(
        submitOnce(calls, batch, timeout),
        results -> rounds(calls, reads, timeout, answers, keepUnserved(pending, results, answers)));
  }

  private static boolean batchFull(Result<Answer> r) {
    return r.error() instanceof BatchFullException;
  }

  /**
   * Files the served answers and gives the reads to send again. A node always serves a call's first
   * read; one that served none gets its answers as they are.
   */
  static List<Integer> keepUnserved(
      List<Integer> pending, List<Result<Answer>> results, List<Result<Answer>> answers) {
    boolean noneServed = results.stream().allMatch(Reads::batchFull);
    List<Integer> unserved = new ArrayList<>();
    for (int j = 0; j < pending.size(); j++) {
      int i = pending.get(j);
      if (batchFull(results.get(j)) && !noneServed) {
        unserved.add(i);
      } else {
        answers.set(i, results.get(j));
      }
    }
    return unserved;
  }
}
