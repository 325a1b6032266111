package io.github.handlestore.client;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.handlestore.proto.v1.WatchEvent;
import java.time.Instant;
import java.util.Optional;

/**
 * One change of a state key or a handle, as a {@link Watch} delivers it.
 *
 * @param kind what it did
 * @param revision the revision of the change (the changes of one write share it)
 * @param store the handle store of a handle's change ("" for a state key)
 * @param key the state key, or the handle id
 * @param value a put's new value ({@link StateValue#NONE} for a delete, an expiry, or a watch with
 *     keys only); a handle's value is the bytes of its JSON
 * @param createRevision a put's creation revision of the entry
 * @param expiresAtMillis a put's expiry in Unix milliseconds (0: never)
 */
public record Change(
    ChangeKind kind,
    long revision,
    String store,
    String key,
    StateValue value,
    long createRevision,
    long expiresAtMillis) {

  /** When a put's entry expires (empty: never, or not a put). */
  public Optional<Instant> expiresAt() {
    return expiresAtMillis == 0
        ? Optional.empty()
        : Optional.of(Instant.ofEpochMilli(expiresAtMillis));
  }

  /**
   * The value as a {@code type} through Jackson's default mapper: a state key's JSON, or a handle's
   * JSON bytes (as its {@link HandleStore} wrote them with the default codec).
   */
  public <T> T valueAs(Class<T> type) {
    return valueAs(JacksonCodec.DEFAULT_MAPPER, type);
  }

  /** {@link #valueAs(Class)} through {@code mapper}. */
  public <T> T valueAs(ObjectMapper mapper, Class<T> type) {
    if (value.isBytes() && type != byte[].class) {
      return JacksonCodec.of(mapper, type).decode(value.bytes());
    }
    return value.as(mapper, type);
  }

  static Change fromWire(WatchEvent e) {
    StateValue v = e.hasValue() ? StateValue.fromWire(e.getValue()) : StateValue.NONE;
    return new Change(
        ChangeKind.fromWire(e.getKind()),
        e.getRevision(),
        e.getStore(),
        e.getKey(),
        v,
        e.getCreateRevision(),
        e.getExpiresAtMs());
  }
}
