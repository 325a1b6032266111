package io.github.handlestore.examples.cart;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.UncheckedIOException;
import java.util.Map;

/** The cart JSON, compact, as the twins write it. */
final class CartJson {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final TypeReference<Map<String, Object>> OBJECT = new TypeReference<>() {};

  private CartJson() {}

  /** {@code value} as compact JSON. */
  static String text(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code value} as a JSON object's tree (what a tool's structured content holds). */
  static Map<String, Object> tree(Object value) {
    return MAPPER.convertValue(value, OBJECT);
  }

  /** {@code json} read as a {@code type}. */
  static <T> T read(String json, Class<T> type) {
    try {
      return MAPPER.readValue(json, type);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException("a stored cart does not decode", e);
    }
  }
}
