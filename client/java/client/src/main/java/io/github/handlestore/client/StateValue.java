package io.github.handlestore.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * A state-tool value: a JSON document (validated by the node) or bytes; or none, in a list without
 * values.
 */
public final class StateValue {
  /** No value (an entry listed without values). */
  public static final StateValue NONE = new StateValue(null, null);

  private final String json;
  private final byte[] bytes;

  private StateValue(String json, byte[] bytes) {
    this.json = json;
    this.bytes = bytes;
  }

  /** A JSON document given as its text. */
  public static StateValue json(String text) {
    return new StateValue(Objects.requireNonNull(text, "text"), null);
  }

  /** Bytes, stored as bytes. */
  public static StateValue bytes(byte[] bytes) {
    return new StateValue(null, Objects.requireNonNull(bytes, "bytes").clone());
  }

  /**
   * {@code value} as a state value: a {@code StateValue} as it is, a {@code byte[]} as bytes,
   * anything else as JSON through {@code mapper}.
   */
  public static StateValue of(Object value, ObjectMapper mapper) {
    if (value instanceof StateValue v) {
      return v;
    }
    if (value instanceof byte[] b) {
      return bytes(b);
    }
    try {
      return json(mapper.writeValueAsString(value));
    } catch (JsonProcessingException e) {
      throw new ValueCodecException("the value is not JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** Whether this is a JSON document. */
  public boolean isJson() {
    return json != null;
  }

  /** Whether this is bytes. */
  public boolean isBytes() {
    return bytes != null;
  }

  /** Whether there is no value (a list without values). */
  public boolean isNone() {
    return json == null && bytes == null;
  }

  /** A JSON value's text (null for bytes or none). */
  public String jsonText() {
    return json;
  }

  /** A bytes value (null for JSON or none). */
  public byte[] bytes() {
    return bytes == null ? null : bytes.clone();
  }

  /** The JSON value as a {@code type}, with Jackson's default mapper. */
  public <T> T as(Class<T> type) {
    return as(JacksonCodec.DEFAULT_MAPPER, type);
  }

  /** The JSON value as a {@code type} through {@code mapper}; bytes as a {@code byte[]}. */
  public <T> T as(ObjectMapper mapper, Class<T> type) {
    if (bytes != null) {
      if (type == byte[].class) {
        return type.cast(bytes.clone());
      }
      throw new ValueCodecException("the value is bytes, not JSON", null);
    }
    if (json == null) {
      throw new ValueCodecException("no value (listed without values)", null);
    }
    return JacksonCodec.of(mapper, type).decode(json.getBytes(StandardCharsets.UTF_8));
  }

  io.github.handlestore.proto.v1.StateValue wire() {
    var b = io.github.handlestore.proto.v1.StateValue.newBuilder();
    if (bytes != null) {
      b.setBytes(com.google.protobuf.ByteString.copyFrom(bytes));
    } else if (json != null) {
      b.setJson(json);
    }
    return b.build();
  }

  static StateValue fromWire(io.github.handlestore.proto.v1.StateValue w) {
    return switch (w.getKindCase()) {
      case JSON -> new StateValue(w.getJson(), null);
      case BYTES -> new StateValue(null, w.getBytes().toByteArray());
      case KIND_NOT_SET -> NONE;
    };
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof StateValue v
        && Objects.equals(json, v.json)
        && Arrays.equals(bytes, v.bytes);
  }

  @Override
  public int hashCode() {
    return Objects.hash(json, Arrays.hashCode(bytes));
  }

  @Override
  public String toString() {
    return isNone() ? "none" : json != null ? json : bytes.length + " bytes";
  }
}
