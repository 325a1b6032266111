package io.github.handlestore.client;

import io.github.handlestore.client.internal.Backoffs;
import io.github.handlestore.client.internal.Calls;
import io.github.handlestore.client.internal.Coalescer;
import io.github.handlestore.client.internal.Conns;
import io.github.handlestore.client.internal.Reads;
import io.github.handlestore.client.internal.Writes;
import io.github.handlestore.proto.v1.Read;
import io.github.handlestore.proto.v1.WriteResult;
import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What a client and its namespace views share: the connections, the calls and their timer, the
 * coalescers that carry concurrent writes and reads, and the threads watches complete their futures
 * on.
 */
final class Shared implements AutoCloseable {
  final Conns conns;
  final Calls calls;
  final Coalescer<Writes.Queued, WriteResult> writes;
  final Coalescer<Read, Reads.Answer> reads;
  private final ScheduledThreadPoolExecutor timer;

  /** Whose turn it is among the endpoints a new watch opens on. */
  final AtomicInteger watchTurns = new AtomicInteger();

  /**
   * Where watches complete their futures: threads of their own (made as needed, gone when idle), so
   * a consumer's continuation runs outside the watch's sequence of tasks and may wait on it.
   */
  private final ExecutorService callbacks =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "handlestore-callback");
            t.setDaemon(true);
            return t;
          });

  Shared(ClientConfig cfg) {
    cfg.validate();
    ChannelCredentials creds =
        cfg.tls == null ? InsecureChannelCredentials.create() : cfg.tls.credentials();
    this.conns = new Conns(cfg.targets(), creds, cfg.token);
    this.timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "handlestore-timer");
              t.setDaemon(true);
              return t;
            });
    timer.setRemoveOnCancelPolicy(true);
    Backoffs backoff = new Backoffs(cfg.backoff.base(), cfg.backoff.max());
    this.calls = new Calls(conns, cfg.callTimeout, cfg.attemptTimeout, backoff, timer);
    this.writes = Writes.coalescer(calls, cfg.maxWriteCalls, timer);
    this.reads = Reads.coalescer(calls, cfg.maxReadCalls, timer);
  }

  /** Runs {@code r} on a callback thread; on this one once the client is closed. */
  void callback(Runnable r) {
    try {
      callbacks.execute(r);
    } catch (RejectedExecutionException e) {
      r.run();
    }
  }

  @Override
  public void close() {
    conns.close();
    timer.shutdown();
    callbacks.shutdown();
  }
}
