package io.github.handlestore.client;

/** How a {@link RequestStateCodec} seals. */
public enum SealMode {
  /** {@code v1.}: readable by the client, tamper-proof (HMAC-SHA256). */
  SIGNED,
  /** {@code v1e.}: also confidential (AES-256-GCM). */
  ENCRYPTED
}
