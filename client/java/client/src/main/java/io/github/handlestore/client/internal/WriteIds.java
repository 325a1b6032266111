package io.github.handlestore.client.internal;

import io.github.handlestore.proto.v1.WriteId;
import java.security.SecureRandom;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A client's exactly-once sequence, as the other clients keep it: a random 64-bit client id and seq
 * 1, 2, 3, ...; each write id also names the lowest seq still in flight ({@code
 * first_incomplete_seq}), below which the cluster may forget the answers it remembers. Every retry
 * of a write reuses its id, so the state machine answers a duplicate with the first answer instead
 * of applying it twice.
 */
public final class WriteIds {
  private static final SecureRandom RANDOM = new SecureRandom();

  private final long clientId;
  private long next = 1;

  /** The lowest seq that may still be in flight. */
  private long low = 1;

  private final Set<Long> inFlight = new HashSet<>();

  /** A fresh sequence under a random client id. */
  public WriteIds() {
    this.clientId = drawClientId();
  }

  /** A client id in 1..2^64-2 (as an unsigned value), as the Rust client draws it. */
  static long drawClientId() {
    while (true) {
      long id = RANDOM.nextLong();
      if (id != 0 && id != -1L) {
        return id;
      }
    }
  }

  /** The id the writes are deduplicated under (an unsigned 64-bit value). */
  public long clientId() {
    return clientId;
  }

  /**
   * Issues the next write id. The seq joins the in-flight set under the same lock that computes the
   * low mark, so no id claims a lower one done while it is still being issued.
   */
  public synchronized Ticket take() {
    long seq = next++;
    inFlight.add(seq);
    while (low < seq && !inFlight.contains(low)) {
      low++;
    }
    WriteId id =
        WriteId.newBuilder().setClientId(clientId).setSeq(seq).setFirstIncompleteSeq(low).build();
    return new Ticket(this, id);
  }

  private synchronized void done(long seq) {
    inFlight.remove(seq);
  }

  /** One write's id, held until the write is answered or given up unsent. */
  public static final class Ticket implements AutoCloseable {
    private final WriteIds ids;
    private final WriteId id;
    private final AtomicBoolean released = new AtomicBoolean();

    Ticket(WriteIds ids, WriteId id) {
      this.ids = ids;
      this.id = id;
    }

    /** The write id; the same on every retry of the write. */
    public WriteId id() {
      return id;
    }

    /** The write was answered, or given up unsent (once; later calls do nothing). */
    @Override
    public void close() {
      if (released.compareAndSet(false, true)) {
        ids.done(id.getSeq());
      }
    }
  }
}
