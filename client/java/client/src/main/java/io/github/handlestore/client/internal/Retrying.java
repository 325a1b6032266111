package io.github.handlestore.client.internal;

import io.github.handlestore.client.errors.CallDeadlineException;
import io.github.handlestore.client.errors.HandlestoreException;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * One call's retry loop: an attempt on one node at a time, each bounded by the attempt timeout and
 * what is left of the call's deadline; after a refusal another node can fix, a pause (backoff with
 * jitter, or the node's pushback) and the next attempt where the refusal points. Once the result is
 * complete, by this loop or by its caller (a cancel, an {@code orTimeout}), the attempt in flight
 * is cancelled and no other starts.
 */
final class Retrying<Q, R> {
  private final Calls calls;
  private final MethodDescriptor<Q, R> method;
  private final Q request;
  private final Check<R> check;
  private final Duration budget;
  private final long deadline;
  private final CompletableFuture<R> result;

  private int tries;
  private HandlestoreException last;
  private volatile ClientCall<Q, R> current;
  private volatile Future<?> pause;

  Retrying(
      Calls calls,
      MethodDescriptor<Q, R> method,
      Q request,
      Check<R> check,
      Duration budget,
      CompletableFuture<R> result) {
    this.calls = calls;
    this.method = method;
    this.request = request;
    this.check = check;
    this.budget = budget;
    this.deadline = System.nanoTime() + budget.toNanos();
    this.result = result;
  }

  void start() {
    result.whenComplete((v, e) -> stop());
    attempt(calls.conns.preferredIndex());
  }

  /** The call ended (answered, failed, cancelled or timed out by its caller): nothing more runs. */
  private void stop() {
    ClientCall<Q, R> call = current;
    if (call != null) {
      call.cancel("the call ended", null);
    }
    Future<?> p = pause;
    if (p != null) {
      p.cancel(false);
    }
  }

  private long left() {
    return deadline - System.nanoTime();
  }

  private void attempt(int idx) {
    if (result.isDone()) {
      return;
    }
    ClientCall<Q, R> call;
    boolean lastAttempt = left() <= calls.attemptTimeout.toNanos();
    try {
      long timeout = Math.max(Math.min(left(), calls.attemptTimeout.toNanos()), 1_000_000L);
      CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(timeout, TimeUnit.NANOSECONDS);
      call = calls.conns.channel(idx).newCall(method, options);
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
      return;
    }
    current = call;
    if (result.isDone()) {
      return;
    }
    call.start(new Listener(idx, lastAttempt), calls.conns.headers());
    call.request(2);
    call.sendMessage(request);
    call.halfClose();
    if (result.isDone()) {
      call.cancel("the call ended", null);
    }
  }

  /** One attempt's answer: its headers, its message, then how it closed. */
  private final class Listener extends ClientCall.Listener<R> {
    private final int idx;

    /** The attempt's own deadline is the call's. */
    private final boolean lastAttempt;

    private Metadata headers;
    private R answer;

    Listener(int idx, boolean lastAttempt) {
      this.idx = idx;
      this.lastAttempt = lastAttempt;
    }

    @Override
    public void onHeaders(Metadata headers) {
      this.headers = headers;
    }

    @Override
    public void onMessage(R message) {
      answer = message;
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      try {
        closed(idx, lastAttempt, status, headers, trailers, answer);
      } catch (RuntimeException e) {
        result.completeExceptionally(e);
      }
    }
  }

  private void closed(
      int idx, boolean lastAttempt, Status status, Metadata headers, Metadata trailers, R answer) {
    if (result.isDone()) {
      return;
    }
    if (status.isOk() && answer != null) {
      Optional<NodeStatus> failed = check.retryableFailure(answer);
      if (failed.isEmpty()) {
        int leader = calls.conns.indexOf(RetryRules.leaderOf(headers));
        calls.conns.prefer(leader >= 0 ? leader : idx);
        result.complete(answer);
        return;
      }
      refused(idx, failed.get());
      return;
    }
    if (status.isOk()) {
      status = Status.INTERNAL.withDescription("the node answered a unary call without a message");
    }
    NodeStatus s = NodeStatus.of(status, trailers);
    boolean cut = lastAttempt && status.getCode() == Status.Code.DEADLINE_EXCEEDED;
    if (left() <= 0 || cut && s.details().reason().isEmpty()) {
      // The call's deadline passed during the attempt: the last refusal says more than the cut.
      result.completeExceptionally(
          new CallDeadlineException(budget, last != null ? last : s.toException()));
      return;
    }
    refused(idx, s);
  }

  /** A refusal: retried (on the node it points to, after a pause) or the call's error. */
  private void refused(int idx, NodeStatus s) {
    String target = calls.conns.targets().get(idx);
    Decision d = Decision.of(s);
    if (d.tls()) {
      result.completeExceptionally(s.tlsError(target));
      return;
    }
    if (!d.retry()) {
      result.completeExceptionally(s.toException());
      return;
    }
    last = s.from(target).toException();
    int next = calls.conns.indexOf(RetryRules.leaderOf(s.trailers()));
    if (next < 0) {
      next = calls.conns.indexOf(s.details().leaderAddress());
    }
    if (next < 0) {
      next = (idx + 1) % calls.conns.targets().size();
    }
    calls.conns.prefer(next);
    Duration wait = calls.backoff.waitAfter(tries++);
    Duration asked = RetryRules.pushback(s.trailers());
    pauseThen(wait.compareTo(asked) >= 0 ? wait : asked, next);
  }

  /** Waits before the next try, unless the deadline would pass first. */
  private void pauseThen(Duration wait, int next) {
    if (wait.toNanos() >= left()) {
      result.completeExceptionally(new CallDeadlineException(budget, last));
      return;
    }
    try {
      pause = calls.timer.schedule(() -> attempt(next), wait.toNanos(), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      result.completeExceptionally(new IllegalStateException("handlestore: the client is closed"));
    }
    if (result.isDone()) {
      stop();
    }
  }
}
