package io.github.handlestore.client;

import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * How a {@link StateTool#store} writes.
 *
 * @param ttl the TTL ({@link Ttl}'s rule)
 * @param expectedRevision with a value, store only if the key is at this revision (0: only if
 *     absent); empty: unconditional
 */
public record StoreOptions(Duration ttl, OptionalLong expectedRevision) {
  /** Unconditional, with the tool's default TTL. */
  public static final StoreOptions DEFAULT = new StoreOptions(Ttl.DEFAULT, OptionalLong.empty());

  /** Options; nulls are the defaults. */
  public StoreOptions {
    ttl = Objects.requireNonNullElse(ttl, Ttl.DEFAULT);
    expectedRevision = Objects.requireNonNullElse(expectedRevision, OptionalLong.empty());
  }

  /** These options with another TTL. */
  public StoreOptions withTtl(Duration ttl) {
    return new StoreOptions(ttl, expectedRevision);
  }

  /** These options as a compare-and-set against {@code revision} (0: only if absent). */
  public StoreOptions withExpectedRevision(long revision) {
    return new StoreOptions(ttl, OptionalLong.of(revision));
  }
}
