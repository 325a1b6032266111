package io.github.handlestore.client;

/** What a {@link Change} did. */
public enum ChangeKind {
  /** A write (a mint, put, store or compare-and-set). */
  PUT,
  /** A delete. */
  DELETE,
  /** Removed because its TTL ran out. */
  EXPIRE;

  static ChangeKind fromWire(io.github.handlestore.proto.v1.EventKind k) {
    return switch (k) {
      case EVENT_KIND_PUT -> PUT;
      case EVENT_KIND_DELETE -> DELETE;
      case EVENT_KIND_EXPIRE -> EXPIRE;
      case UNRECOGNIZED -> throw Client.unexpected("watch event", k);
    };
  }
}
