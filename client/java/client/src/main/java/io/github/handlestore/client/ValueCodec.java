package io.github.handlestore.client;

/**
 * How a {@link HandleStore}'s values become the bytes the cluster keeps, and back. The default is
 * JSON through Jackson ({@link JacksonCodec}), which every other client reads; a codec of your own
 * must agree with the other readers of its store.
 */
public interface ValueCodec<T> {
  /**
   * The stored form of {@code value}.
   *
   * @throws ValueCodecException if it has none
   */
  byte[] encode(T value);

  /**
   * The value of a stored form.
   *
   * @throws ValueCodecException if {@code stored} is not one
   */
  T decode(byte[] stored);
}
