package io.github.handlestore.client;

import io.github.handlestore.proto.v1.ReadOptions;

/** The consistency of a read, chosen per store, tool or call. */
public final class Consistency {
  /**
   * The default: read-index from the leader, served once the serving node has applied it (a read
   * sees every write acknowledged before it began).
   */
  public static final Consistency LINEARIZABLE =
      new Consistency(io.github.handlestore.proto.v1.Consistency.CONSISTENCY_LINEARIZABLE, 0);

  /** Whatever the serving node has applied now. */
  public static final Consistency STALE =
      new Consistency(io.github.handlestore.proto.v1.Consistency.CONSISTENCY_STALE, 0);

  private final io.github.handlestore.proto.v1.Consistency kind;
  private final long minRevision;

  private Consistency(io.github.handlestore.proto.v1.Consistency kind, long minRevision) {
    this.kind = kind;
    this.minRevision = minRevision;
  }

  /**
   * Served by a node that has applied at least {@code revision} (read-your-writes without a leader
   * round trip: pass a write's revision).
   */
  public static Consistency atLeast(long revision) {
    return new Consistency(
        io.github.handlestore.proto.v1.Consistency.CONSISTENCY_AT_LEAST, revision);
  }

  ReadOptions wire() {
    return ReadOptions.newBuilder().setConsistency(kind).setMinRevision(minRevision).build();
  }

  @Override
  public String toString() {
    return kind == io.github.handlestore.proto.v1.Consistency.CONSISTENCY_AT_LEAST
        ? "atLeast(" + minRevision + ")"
        : kind.name();
  }
}
