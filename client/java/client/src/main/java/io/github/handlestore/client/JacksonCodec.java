package io.github.handlestore.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.util.Objects;

/**
 * Values as compact JSON through Jackson 2 (with {@code <}, {@code >} and {@code &} as they are, as
 * the other clients write them). Pass your application's {@link ObjectMapper} to use its modules
 * and settings.
 */
public final class JacksonCodec<T> implements ValueCodec<T> {
  /** The mapper of the codecs made without one: Jackson's defaults. */
  static final ObjectMapper DEFAULT_MAPPER = JsonMapper.builder().build();

  private final ObjectMapper mapper;
  private final JavaType type;

  private JacksonCodec(ObjectMapper mapper, JavaType type) {
    this.mapper = mapper;
    this.type = type;
  }

  /** Values of {@code type} with Jackson's default mapper. */
  public static <T> JacksonCodec<T> of(Class<T> type) {
    return of(DEFAULT_MAPPER, type);
  }

  /** Values of {@code type} through {@code mapper}. */
  public static <T> JacksonCodec<T> of(ObjectMapper mapper, Class<T> type) {
    return new JacksonCodec<>(mapper, mapper.constructType(Objects.requireNonNull(type, "type")));
  }

  /**
   * Values of a generic type ({@code new TypeReference<List<Item>>() {}}) through {@code mapper}.
   */
  public static <T> JacksonCodec<T> of(ObjectMapper mapper, TypeReference<T> type) {
    return new JacksonCodec<>(mapper, mapper.constructType(Objects.requireNonNull(type, "type")));
  }

  @Override
  public byte[] encode(T value) {
    try {
      return mapper.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new ValueCodecException("the value is not JSON: " + e.getOriginalMessage(), e);
    }
  }

  @Override
  public T decode(byte[] stored) {
    try {
      return mapper.readValue(stored, type);
    } catch (IOException e) {
      throw new ValueCodecException("the stored value is not a " + type + ": " + e.getMessage(), e);
    }
  }
}
