package io.github.handlestore.client;

import io.github.handlestore.client.internal.Futures;
import java.time.Duration;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * A {@link HandleStore} whose methods wait for their answer: the same calls, with the error table's
 * exceptions thrown as they are. An interrupt of the waiting thread stops the call and its retries,
 * and throws {@link java.util.concurrent.CancellationException} with the interrupt flag set again.
 */
public final class BlockingHandleStore<T> {
  private final HandleStore<T> store;

  BlockingHandleStore(HandleStore<T> store) {
    this.store = store;
  }

  /** The asynchronous store this one waits on. */
  public HandleStore<T> async() {
    return store;
  }

  /** See {@link HandleStore#mint(Object)}. */
  public String mint(T value) {
    return Futures.await(store.mint(value));
  }

  /** See {@link HandleStore#mint(Object, Duration)}. */
  public String mint(T value, Duration ttl) {
    return Futures.await(store.mint(value, ttl));
  }

  /** See {@link HandleStore#mintWithId}. */
  public WriteOutcome mintWithId(String id, T value, Duration ttl) {
    return Futures.await(store.mintWithId(id, value, ttl));
  }

  /** See {@link HandleStore#put(String, Object)}. */
  public boolean put(String id, T value) {
    return Futures.await(store.put(id, value));
  }

  /** See {@link HandleStore#put(String, Object, Duration)}. */
  public boolean put(String id, T value, Duration ttl) {
    return Futures.await(store.put(id, value, ttl));
  }

  /** See {@link HandleStore#putWith}. */
  public WriteOutcome putWith(String id, T value, PutOptions options) {
    return Futures.await(store.putWith(id, value, options));
  }

  /** See {@link HandleStore#get}. */
  public Optional<T> get(String id) {
    return Futures.await(store.get(id));
  }

  /** See {@link HandleStore#getVersioned}. */
  public Optional<Versioned<T>> getVersioned(String id) {
    return Futures.await(store.getVersioned(id));
  }

  /** See {@link HandleStore#delete}. */
  public boolean delete(String id) {
    return Futures.await(store.delete(id));
  }

  /** See {@link HandleStore#deleteWith}. */
  public WriteOutcome deleteWith(String id, long expectedRevision) {
    return Futures.await(store.deleteWith(id, expectedRevision));
  }

  /** See {@link HandleStore#len}. */
  public long len() {
    return Futures.await(store.len());
  }

  /** See {@link HandleStore#update}. */
  public Optional<T> update(String id, UnaryOperator<T> fn) {
    return Futures.await(store.update(id, fn));
  }
}
