package io.github.handlestore.client;

import java.time.Instant;
import java.util.HexFormat;

/**
 * One key of a namespace's request-state key ring.
 *
 * @param id the key's id
 * @param primary whether it seals new request state (every key of the ring opens)
 * @param created when it was made
 * @param secret its 32-byte secret, only when asked for ({@link KeyRing#list(boolean)}); empty
 *     otherwise
 */
public record RingKey(String id, boolean primary, Instant created, byte[] secret) {
  /** A key; the secret is copied (null: none). */
  public RingKey {
    secret = secret == null ? new byte[0] : secret.clone();
  }

  /** A key of fixed secret (tests, a single process): {@code secretHex} is its hex. */
  public static RingKey of(String id, boolean primary, String secretHex) {
    return new RingKey(id, primary, Instant.EPOCH, HexFormat.of().parseHex(secretHex));
  }

  /** A copy of the secret (empty if it was not asked for). */
  @Override
  public byte[] secret() {
    return secret.clone();
  }

  /** Never shows the secret. */
  @Override
  public String toString() {
    return "RingKey[" + id + (primary ? ", primary" : "") + ", created " + created + "]";
  }

  static RingKey fromWire(io.github.handlestore.proto.v1.RingKey k) {
    return new RingKey(
        k.getId(),
        k.getState().equals("primary"),
        Instant.ofEpochMilli(k.getCreatedMs()),
        k.getSecret().toByteArray());
  }
}
