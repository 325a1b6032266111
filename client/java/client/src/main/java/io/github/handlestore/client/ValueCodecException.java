package io.github.handlestore.client;

/** A value could not be encoded for the cluster, or a stored value decoded. */
public class ValueCodecException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** A codec failure, with what caused it. */
  public ValueCodecException(String message, Throwable cause) {
    super("handlestore: value codec: " + message, cause);
  }
}
