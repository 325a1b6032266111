package io.github.handlestore.client;

import io.github.handlestore.client.internal.Futures;
import java.util.List;

/** A {@link KeyRing} whose methods wait, with the error table's exceptions thrown as they are. */
public final class BlockingKeyRing {
  private final KeyRing ring;

  BlockingKeyRing(KeyRing ring) {
    this.ring = ring;
  }

  /** The asynchronous key ring this one waits on. */
  public KeyRing async() {
    return ring;
  }

  /** See {@link KeyRing#list()}. */
  public List<RingKey> list() {
    return Futures.await(ring.list());
  }

  /** See {@link KeyRing#list(boolean)}. */
  public List<RingKey> list(boolean includeSecrets) {
    return Futures.await(ring.list(includeSecrets));
  }

  /** See {@link KeyRing#create()}. */
  public String create() {
    return Futures.await(ring.create());
  }

  /** See {@link KeyRing#rotate()}. */
  public String rotate() {
    return Futures.await(ring.rotate());
  }

  /** See {@link KeyRing#retire}. */
  public void retire(String keyId) {
    Futures.await(ring.retire(keyId));
  }
}
