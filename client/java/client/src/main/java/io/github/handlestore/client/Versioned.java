package io.github.handlestore.client;

import java.time.Instant;
import java.util.Optional;

/**
 * A value with its revisions, for compare-and-set.
 *
 * @param value the value
 * @param createRevision the revision that created the entry
 * @param modRevision the revision that last wrote it (what a compare-and-set expects)
 * @param expiresAtMillis when it expires, in Unix milliseconds (0: never)
 */
public record Versioned<T>(T value, long createRevision, long modRevision, long expiresAtMillis) {
  /** When it expires (empty: never). */
  public Optional<Instant> expiresAt() {
    return expiresAtMillis == 0
        ? Optional.empty()
        : Optional.of(Instant.ofEpochMilli(expiresAtMillis));
  }
}
