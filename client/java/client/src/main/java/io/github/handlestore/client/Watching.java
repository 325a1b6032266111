package io.github.handlestore.client;

import io.github.handlestore.client.errors.CallDeadlineException;
import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.client.internal.NodeStatus;
import io.github.handlestore.client.internal.WatchStream;
import io.github.handlestore.client.internal.WatchStream.Verdict;
import io.github.handlestore.proto.v1.WatchEvent;
import io.github.handlestore.proto.v1.WatchRequest;
import io.github.handlestore.proto.v1.WatchResponse;
import io.grpc.SynchronizationContext;
import io.grpc.SynchronizationContext.ScheduledHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The state machine behind a {@link Watch}, as the Go client's (client/go/watch.go): it opens the
 * watch on a node, delivers what the node sends from the position (the next revision not delivered
 * yet), and when the node ends the stream, fails, cuts a slow watcher off or goes quiet, resumes on
 * the next node from that position, so every change is delivered once, in order. Opening (at first
 * and on every resume) tries the nodes in turn with backoff within the client's call timeout.
 *
 * <p>Everything runs in one {@link SynchronizationContext} (tasks in sequence, on whichever thread
 * posts first): the consumer's calls, gRPC's callbacks and the timers. The stream is driven only
 * while someone waits (the first opening, or a {@code next()}): a watch nobody reads holds what its
 * stream brought and no more. Futures are completed off the context, so that a consumer's
 * continuation may call back in; a batch handed to a {@code next()} its caller gave up meanwhile is
 * kept for the next one, so nothing is lost in that race.
 */
final class Watching {
  /** The node sends progress every 2 s while idle: three missed is a lost node (as in Go). */
  static final Duration SILENCE = Duration.ofSeconds(6);

  private final Shared shared;
  private final WatchRequest request;
  private final boolean progress;
  private final SynchronizationContext ctx =
      new SynchronizationContext(
          (t, e) -> System.getLogger("handlestore").log(System.Logger.Level.ERROR, "watch", e));

  // Read by the getters while the context runs.
  private volatile long position;
  private volatile int node;
  private volatile int resumes;

  private WatchStream stream;
  private boolean established;
  private CompletableFuture<Void> opening;
  private CompletableFuture<WatchBatch> pending;
  private WatchBatch held;
  private boolean handing;
  private boolean closed;
  private RuntimeException failure;

  // The attempts to open the stream, bounded by the call timeout from the first.
  private long cycleDeadline;
  private int tries;
  private HandlestoreException last;
  private ScheduledHandle pause;
  private ScheduledHandle silence;

  Watching(Shared shared, WatchRequest request, boolean progress, int node) {
    this.shared = shared;
    this.request = request;
    this.progress = progress;
    this.position = request.getStartRevision();
    this.node = node;
  }

  /** Opens the watch; the future completes once a node established it. */
  CompletableFuture<Void> start() {
    CompletableFuture<Void> f = new CompletableFuture<>();
    ctx.execute(
        () -> {
          opening = f;
          pump();
        });
    // Given up (cancelled, timed out, or failed): nothing stays open.
    f.whenComplete(
        (v, e) -> {
          if (e != null) {
            ctx.execute(() -> shut(null));
          }
        });
    return f;
  }

  /** The next batch (see {@link Watch#next()}). */
  CompletableFuture<WatchBatch> next() {
    CompletableFuture<WatchBatch> f = new CompletableFuture<>();
    ctx.execute(
        () -> {
          if (closed) {
            off(() -> f.completeExceptionally(new WatchClosedException(failure)));
          } else if (pending != null) {
            off(() -> f.completeExceptionally(new IllegalStateException(busy())));
          } else {
            pending = f;
            pump();
          }
        });
    // A caller that gives up (a cancel, orTimeout) stops the opening it was waiting for.
    f.whenComplete(
        (v, e) ->
            ctx.execute(
                () -> {
                  if (pending == f) {
                    pending = null;
                    pump();
                  }
                }));
    return f;
  }

  private static String busy() {
    return "handlestore: a next() of this watch is waiting already";
  }

  void close() {
    ctx.execute(() -> shut(null));
  }

  long position() {
    return position;
  }

  String node() {
    return shared.conns.targets().get(node);
  }

  int resumes() {
    return resumes;
  }

  /** Takes the next step, whatever woke the watch. */
  private void pump() {
    if (closed || handing) {
      return;
    }
    if (held != null && pending != null) {
      WatchBatch b = held;
      held = null;
      hand(b);
    } else if (opening == null && pending == null) {
      idle();
    } else if (stream == null) {
      if (pause == null) {
        connect();
      }
    } else if (!established) {
      opened();
    } else {
      read();
    }
  }

  /** Nobody waits: an opening under way stops (the next waiter starts another). */
  private void idle() {
    quiet();
    if (!established) {
      drop();
      endCycle();
    }
  }

  private void connect() {
    long now = System.nanoTime();
    if (cycleDeadline == 0) {
      cycleDeadline = now + budget().toNanos();
    }
    try {
      WatchRequest.Builder r = request.toBuilder();
      if (position > 0) {
        r.setStartRevision(position);
      }
      stream = WatchStream.open(shared.conns, node, r.build(), ctx, this::changed);
    } catch (RuntimeException e) {
      failWaiter(e);
      return;
    }
    listen();
  }

  private void changed(WatchStream s) {
    if (s == stream) {
      pump();
    }
  }

  /** The stream is opening: its first answer says whether the node established it. */
  private void opened() {
    WatchResponse m = stream.poll();
    if (m == null) {
      if (stream.ended()) {
        refused(stream.status(), stream.error());
      } else {
        listen();
      }
      return;
    }
    quiet();
    if (!m.getCreated()) {
      String why = stream.target() + ": the node's first watch answer is not 'created'";
      drop();
      failWaiter(HandlestoreException.of(io.grpc.Status.Code.INTERNAL, why, null));
      return;
    }
    established = true;
    position = m.getRevision() + 1;
    endCycle();
    if (opening != null) {
      CompletableFuture<Void> f = opening;
      opening = null;
      off(() -> f.complete(null));
    }
    pump();
  }

  /** An opening failed: the next node after a pause, or the waiter's error. */
  private void refused(NodeStatus s, HandlestoreException e) {
    String target = stream != null ? stream.target() : node();
    drop();
    Verdict v = WatchStream.verdict(s);
    if (v != Verdict.MOVE_ON) {
      RuntimeException err = v == Verdict.TLS ? s.tlsError(target) : e;
      if (opening != null) {
        failWaiter(err);
      } else {
        fail(err);
      }
      return;
    }
    last = e;
    moveOn();
    Duration wait = shared.calls.backoffAfter(tries++);
    if (System.nanoTime() + wait.toNanos() >= cycleDeadline) {
      failWaiter(new CallDeadlineException(budget(), last));
      return;
    }
    pause =
        ctx.schedule(
            () -> {
              pause = null;
              pump();
            },
            wait.toNanos(),
            TimeUnit.NANOSECONDS,
            shared.calls.timer());
  }

  /** The stream is established: deliver what it brought, or see how it ended. */
  private void read() {
    for (WatchResponse m = stream.poll(); m != null; m = stream.poll()) {
      quiet();
      Optional<WatchBatch> b;
      try {
        b = take(m);
      } catch (RuntimeException e) { // a change this client cannot read (a kind it does not know)
        fail(e);
        return;
      }
      if (b.isPresent()) {
        hand(b.get());
        return;
      }
    }
    if (!stream.ended()) {
      listen();
      return;
    }
    quiet();
    Verdict v = WatchStream.verdict(stream.status());
    if (v != Verdict.MOVE_ON) {
      fail(v == Verdict.TLS ? stream.status().tlsError(stream.target()) : stream.error());
      return;
    }
    resume();
  }

  /** The stream is lost: on to the next node, from the position. */
  private void resume() {
    drop();
    moveOn();
    resumes++;
    pump();
  }

  /** What of a response was not delivered yet (empty: nothing to deliver). */
  private Optional<WatchBatch> take(WatchResponse m) {
    long from = position;
    position = Math.max(from, m.getRevision() + 1);
    List<Change> changes = new ArrayList<>();
    for (WatchEvent e : m.getEventsList()) {
      if (e.getRevision() >= from) {
        changes.add(Change.fromWire(e));
      }
    }
    if (changes.isEmpty() && (!progress || m.getRevision() + 1 < from)) {
      return Optional.empty();
    }
    return Optional.of(new WatchBatch(m.getRevision(), changes));
  }

  /**
   * Gives {@code b} to the waiting {@code next()}, off the context; if its caller gave up
   * meanwhile, {@code b} is held for the next one. Nothing else is delivered until then.
   */
  private void hand(WatchBatch b) {
    CompletableFuture<WatchBatch> f = pending;
    if (f == null) {
      held = b;
      return;
    }
    pending = null;
    handing = true;
    off(
        () -> {
          boolean taken = f.complete(b);
          ctx.execute(
              () -> {
                handing = false;
                if (!taken && !closed) {
                  held = b;
                }
                pump();
              });
        });
  }

  /** Waits for the stream at most {@link #SILENCE}; then the node counts as lost. */
  private void listen() {
    if (silence != null) {
      return;
    }
    WatchStream s = stream;
    silence =
        ctx.schedule(
            () -> {
              silence = null;
              if (s == stream) {
                silent();
              }
            },
            SILENCE.toNanos(),
            TimeUnit.NANOSECONDS,
            shared.calls.timer());
  }

  private void quiet() {
    if (silence != null) {
      silence.cancel();
      silence = null;
    }
  }

  private void silent() {
    if (established) {
      resume();
      return;
    }
    NodeStatus s = WatchStream.lost("no answer to the watch within " + SILENCE);
    refused(s, WatchStream.errorOf(stream.target(), s));
  }

  private void moveOn() {
    node = (node + 1) % shared.conns.targets().size();
  }

  private void drop() {
    quiet();
    if (stream != null) {
      stream.cancel();
      stream = null;
    }
    established = false;
  }

  private void endCycle() {
    cycleDeadline = 0;
    tries = 0;
    last = null;
    if (pause != null) {
      pause.cancel();
      pause = null;
    }
  }

  private Duration budget() {
    return shared.calls.callTimeout();
  }

  /**
   * The waiter's error: a watch that never opened is closed with it; a {@code next()} gets it and
   * the watch stays usable (its next {@code next()} tries again).
   */
  private void failWaiter(RuntimeException e) {
    endCycle();
    if (opening != null) {
      CompletableFuture<Void> f = opening;
      opening = null;
      shut(e);
      off(() -> f.completeExceptionally(e));
    } else if (pending != null) {
      CompletableFuture<WatchBatch> f = pending;
      pending = null;
      off(() -> f.completeExceptionally(e));
    }
  }

  /** A failure resuming cannot fix: the waiting {@code next()} gets it, and the watch closes. */
  private void fail(RuntimeException e) {
    CompletableFuture<WatchBatch> f = pending;
    pending = null;
    shut(e);
    if (f != null) {
      off(() -> f.completeExceptionally(e));
    }
  }

  /** Closes the watch ({@code why}: the failure that closed it, or null for a close). */
  private void shut(RuntimeException why) {
    if (closed) {
      return;
    }
    closed = true;
    failure = why;
    drop();
    endCycle();
    held = null;
    WatchClosedException e = new WatchClosedException(why);
    CompletableFuture<?> o = opening;
    CompletableFuture<?> p = pending;
    opening = null;
    pending = null;
    if (o != null) {
      off(() -> o.completeExceptionally(e));
    }
    if (p != null) {
      off(() -> p.completeExceptionally(e));
    }
  }

  /** Runs {@code r} on the client's callback threads (here once those are shut down). */
  private void off(Runnable r) {
    shared.callback(r);
  }
}
