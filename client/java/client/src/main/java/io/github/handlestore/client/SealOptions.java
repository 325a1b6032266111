package io.github.handlestore.client;

import java.time.Duration;
import java.util.Objects;

/**
 * How {@link RequestStateCodec#seal} seals.
 *
 * @param tool also bind the blob to this tool ("": to the subject only)
 * @param ttl how long the blob stays valid (zero: 10 minutes; at least a second)
 */
public record SealOptions(String tool, Duration ttl) {
  /** Bound to the subject only, valid 10 minutes. */
  public static final SealOptions DEFAULT = new SealOptions("", Duration.ZERO);

  /** Options; nulls are the defaults, a negative TTL is refused. */
  public SealOptions {
    tool = Objects.requireNonNullElse(tool, "");
    ttl = Objects.requireNonNullElse(ttl, Duration.ZERO);
    if (ttl.isNegative()) {
      throw new IllegalArgumentException("ttl must not be negative");
    }
  }

  /** These options bound to {@code tool} too. */
  public SealOptions forTool(String tool) {
    return new SealOptions(tool, ttl);
  }

  /** These options valid for {@code ttl}. */
  public SealOptions withTtl(Duration ttl) {
    return new SealOptions(tool, ttl);
  }
}
