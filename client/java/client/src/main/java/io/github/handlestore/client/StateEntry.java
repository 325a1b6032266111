package io.github.handlestore.client;

import java.time.Instant;
import java.util.Optional;

/**
 * A key with its value and revisions.
 *
 * @param key the key
 * @param value the value ({@link StateValue#NONE} in a list without values)
 * @param createRevision the revision that created the key
 * @param modRevision the revision that last wrote it
 * @param expiresAtMillis when it expires, in Unix milliseconds (0: never)
 */
public record StateEntry(
    String key, StateValue value, long createRevision, long modRevision, long expiresAtMillis) {
  /** When it expires (empty: never). */
  public Optional<Instant> expiresAt() {
    return expiresAtMillis == 0
        ? Optional.empty()
        : Optional.of(Instant.ofEpochMilli(expiresAtMillis));
  }

  static StateEntry fromWire(io.github.handlestore.proto.v1.StateEntry e) {
    StateValue v = e.hasValue() ? StateValue.fromWire(e.getValue()) : StateValue.NONE;
    return new StateEntry(
        e.getKey(), v, e.getCreateRevision(), e.getModRevision(), e.getExpiresAtMs());
  }
}
