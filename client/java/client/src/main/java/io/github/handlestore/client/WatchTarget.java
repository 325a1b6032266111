package io.github.handlestore.client;

import io.github.handlestore.proto.v1.HandleRef;
import io.github.handlestore.proto.v1.WatchRequest;
import java.util.Objects;

/**
 * What a {@link Watch} follows: the state keys under a prefix, one state key, every handle of a
 * store, or one handle. Checked (as every key and id the client sends) when the watch starts.
 */
public final class WatchTarget {
  private enum Kind {
    PREFIX,
    KEY,
    STORE,
    HANDLE
  }

  private final Kind kind;
  private final String store;
  private final String key;

  private WatchTarget(Kind kind, String store, String key) {
    this.kind = kind;
    this.store = store;
    this.key = key;
  }

  /** The state keys under {@code prefix} ("": every state key of the namespace). */
  public static WatchTarget prefix(String prefix) {
    return new WatchTarget(Kind.PREFIX, "", Objects.requireNonNull(prefix, "prefix"));
  }

  /** One state key. */
  public static WatchTarget key(String key) {
    return new WatchTarget(Kind.KEY, "", Objects.requireNonNull(key, "key"));
  }

  /** Every handle of a store. */
  public static WatchTarget store(String store) {
    return new WatchTarget(Kind.STORE, Objects.requireNonNull(store, "store"), "");
  }

  /** One handle. */
  public static WatchTarget handle(String store, String id) {
    return new WatchTarget(
        Kind.HANDLE, Objects.requireNonNull(store, "store"), Objects.requireNonNull(id, "id"));
  }

  /** Throws {@code InvalidArgumentException} if the key, prefix, store or id is malformed. */
  void check() {
    switch (kind) {
      case PREFIX -> Formats.checkPrefix(key);
      case KEY -> Formats.checkKey(key);
      case STORE -> Formats.checkStore(store);
      case HANDLE -> {
        Formats.checkStore(store);
        Formats.checkHandleId(key);
      }
    }
  }

  void applyTo(WatchRequest.Builder r) {
    switch (kind) {
      case PREFIX -> r.setPrefix(key);
      case KEY -> r.setKey(key);
      case STORE -> r.setStore(store);
      case HANDLE -> r.setHandle(HandleRef.newBuilder().setStore(store).setId(key));
    }
  }

  @Override
  public String toString() {
    return switch (kind) {
      case PREFIX -> "prefix " + Formats.shown(key);
      case KEY -> "key " + Formats.shown(key);
      case STORE -> "store " + store;
      case HANDLE -> "handle " + store + "/" + key;
    };
  }
}
