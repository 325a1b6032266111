package io.github.handlestore.client;

import io.github.handlestore.client.internal.Futures;
import java.util.Optional;

/** A {@link ClientStateStore} whose methods wait, with the error table's exceptions as they are. */
public final class BlockingClientStateStore {
  private final ClientStateStore store;

  BlockingClientStateStore(ClientStateStore store) {
    this.store = store;
  }

  /** The asynchronous store this one waits on. */
  public ClientStateStore async() {
    return store;
  }

  /** See {@link ClientStateStore#setSessionId}. */
  public void setSessionId(String id) {
    Futures.await(store.setSessionId(id));
  }

  /** See {@link ClientStateStore#sessionId}. */
  public Optional<String> sessionId() {
    return Futures.await(store.sessionId());
  }

  /** See {@link ClientStateStore#clearSessionId}. */
  public void clearSessionId() {
    Futures.await(store.clearSessionId());
  }

  /** See {@link ClientStateStore#setSealed}. */
  public void setSealed(String field, Object value) {
    Futures.await(store.setSealed(field, value));
  }

  /** See {@link ClientStateStore#sealed}. */
  public <T> Optional<T> sealed(String field, Class<T> type) {
    return Futures.await(store.sealed(field, type));
  }

  /** See {@link ClientStateStore#openSealed}. */
  public <T> Optional<T> openSealed(String field, Class<T> type) {
    return Futures.await(store.openSealed(field, type));
  }

  /** See {@link ClientStateStore#setField}. */
  public void setField(String field, Object value) {
    Futures.await(store.setField(field, value));
  }

  /** See {@link ClientStateStore#field}. */
  public <T> Optional<T> field(String field, Class<T> type) {
    return Futures.await(store.field(field, type));
  }

  /** See {@link ClientStateStore#clearField}. */
  public void clearField(String field) {
    Futures.await(store.clearField(field));
  }

  /** See {@link ClientStateStore#setAccessToken}. */
  public void setAccessToken(String token) {
    Futures.await(store.setAccessToken(token));
  }

  /** See {@link ClientStateStore#accessToken}. */
  public Optional<String> accessToken() {
    return Futures.await(store.accessToken());
  }

  /** See {@link ClientStateStore#clearAccessToken}. */
  public void clearAccessToken() {
    Futures.await(store.clearAccessToken());
  }

  /** See {@link ClientStateStore#setProtocolVersion}. */
  public void setProtocolVersion(String version) {
    Futures.await(store.setProtocolVersion(version));
  }

  /** See {@link ClientStateStore#protocolVersion}. */
  public Optional<String> protocolVersion() {
    return Futures.await(store.protocolVersion());
  }

  /** See {@link ClientStateStore#clearProtocolVersion}. */
  public void clearProtocolVersion() {
    Futures.await(store.clearProtocolVersion());
  }

  /** See {@link ClientStateStore#setServerCapabilities}. */
  public void setServerCapabilities(Object capabilities) {
    Futures.await(store.setServerCapabilities(capabilities));
  }

  /** See {@link ClientStateStore#serverCapabilities}. */
  public <T> Optional<T> serverCapabilities(Class<T> type) {
    return Futures.await(store.serverCapabilities(type));
  }

  /** See {@link ClientStateStore#clearServerCapabilities}. */
  public void clearServerCapabilities() {
    Futures.await(store.clearServerCapabilities());
  }

  /** See {@link ClientStateStore#clear}. */
  public void clear() {
    Futures.await(store.clear());
  }
}
