package io.github.handlestore.client.internal;

import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Unary calls with failover, retries with backoff and a deadline (see {@link Retrying}): what every
 * call of a client goes through.
 */
public final class Calls {
  final Conns conns;
  final Duration callTimeout;
  final Duration attemptTimeout;
  final Backoffs backoff;
  final ScheduledExecutorService timer;

  /** Calls over {@code conns}; {@code timer} paces the retries. */
  public Calls(
      Conns conns,
      Duration callTimeout,
      Duration attemptTimeout,
      Backoffs backoff,
      ScheduledExecutorService timer) {
    this.conns = conns;
    this.callTimeout = callTimeout;
    this.attemptTimeout = attemptTimeout;
    this.backoff = backoff;
    this.timer = timer;
  }

  /** The connections. */
  public Conns conns() {
    return conns;
  }

  /** How long a call has when it names no timeout of its own. */
  public Duration callTimeout() {
    return callTimeout;
  }

  /** The timer that paces retries (a watch's pauses and silences too). */
  public ScheduledExecutorService timer() {
    return timer;
  }

  /** The pause before the next try after {@code tries} failed ones (full jitter). */
  public Duration backoffAfter(int tries) {
    return backoff.waitAfter(tries);
  }

  /**
   * Calls {@code method}: on the preferred node first (the leader, once known), then where a
   * refusal points (the leader it names) or the next node, until an answer, an error that is not
   * retried, or the deadline ({@code timeout}, else the call timeout). The future fails with a
   * {@link io.github.handlestore.client.errors.HandlestoreException}; cancelling it (or completing
   * it in any other way, as {@code orTimeout} does) ends the call and its retries at once.
   */
  public <Q, R> CompletableFuture<R> invoke(
      MethodDescriptor<Q, R> method, Q request, Check<R> check, Duration timeout) {
    Duration budget = timeout == null ? callTimeout : timeout;
    CompletableFuture<R> result = new CompletableFuture<>();
    new Retrying<>(this, method, request, check, budget, result).start();
    return result;
  }

  /** {@link #invoke} without a check, with the call timeout. */
  public <Q, R> CompletableFuture<R> invoke(MethodDescriptor<Q, R> method, Q request) {
    return invoke(method, request, Check.none(), null);
  }
}
