package io.github.handlestore.client;

import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * How a {@link HandleStore#putWith} writes.
 *
 * @param ttl the TTL ({@link Ttl}'s rule)
 * @param expectedRevision with a value, a compare-and-set: applied only if the handle is at this
 *     revision (0: only if it is absent); empty: an upsert
 */
public record PutOptions(Duration ttl, OptionalLong expectedRevision) {
  /** An upsert with the store's default TTL. */
  public static final PutOptions DEFAULT = new PutOptions(Ttl.DEFAULT, OptionalLong.empty());

  /** Options; nulls are the defaults. */
  public PutOptions {
    ttl = Objects.requireNonNullElse(ttl, Ttl.DEFAULT);
    expectedRevision = Objects.requireNonNullElse(expectedRevision, OptionalLong.empty());
  }

  /** These options with another TTL. */
  public PutOptions withTtl(Duration ttl) {
    return new PutOptions(ttl, expectedRevision);
  }

  /** These options as a compare-and-set against {@code revision} (0: only if absent). */
  public PutOptions withExpectedRevision(long revision) {
    return new PutOptions(ttl, OptionalLong.of(revision));
  }
}
