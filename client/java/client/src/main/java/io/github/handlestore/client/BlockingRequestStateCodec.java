package io.github.handlestore.client;

import io.github.handlestore.client.internal.Futures;
import java.util.Optional;

/**
 * A {@link RequestStateCodec} whose methods wait (what a synchronous seam, as the Java MCP SDK's
 * {@code RequestStateCodec}, calls), with the error table's exceptions thrown as they are.
 */
public final class BlockingRequestStateCodec {
  private final RequestStateCodec codec;

  BlockingRequestStateCodec(RequestStateCodec codec) {
    this.codec = codec;
  }

  /** The asynchronous codec this one waits on. */
  public RequestStateCodec async() {
    return codec;
  }

  /** See {@link RequestStateCodec#seal(Object, String)}. */
  public String seal(Object state, String subject) {
    return Futures.await(codec.seal(state, subject));
  }

  /** See {@link RequestStateCodec#seal(Object, String, SealOptions)}. */
  public String seal(Object state, String subject, SealOptions options) {
    return Futures.await(codec.seal(state, subject, options));
  }

  /** See {@link RequestStateCodec#open(String, String, String)}. */
  public Optional<String> open(String blob, String subject, String tool) {
    return Futures.await(codec.open(blob, subject, tool));
  }

  /** See {@link RequestStateCodec#open(String, String, String, Class)}. */
  public <T> Optional<T> open(String blob, String subject, String tool, Class<T> type) {
    return Futures.await(codec.open(blob, subject, tool, type));
  }
}
