package io.github.handlestore.client;

import java.time.Duration;
import java.util.Objects;

/**
 * One write of a {@link StateTool#batchStore}.
 *
 * @param key the key
 * @param value a {@link StateValue}, a {@code byte[]} (bytes) or anything else (JSON)
 * @param options its TTL and compare-and-set
 */
public record StoreItem(String key, Object value, StoreOptions options) {
  /** An item; null options are the defaults. */
  public StoreItem {
    options = Objects.requireNonNullElse(options, StoreOptions.DEFAULT);
  }

  /** An unconditional item with the tool's default TTL. */
  public static StoreItem of(String key, Object value) {
    return new StoreItem(key, value, StoreOptions.DEFAULT);
  }

  /** An unconditional item with its own TTL. */
  public static StoreItem of(String key, Object value, Duration ttl) {
    return new StoreItem(key, value, StoreOptions.DEFAULT.withTtl(ttl));
  }
}
