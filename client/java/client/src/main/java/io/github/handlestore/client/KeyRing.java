package io.github.handlestore.client;

import io.github.handlestore.client.internal.Futures;
import io.github.handlestore.client.internal.WriteIds;
import io.github.handlestore.proto.v1.AdminGrpc;
import io.github.handlestore.proto.v1.KeyringListRequest;
import io.github.handlestore.proto.v1.KeyringResponse;
import io.github.handlestore.proto.v1.KeyringRetireRequest;
import io.github.handlestore.proto.v1.KeyringRotateRequest;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The request-state key ring of a client's namespace, replicated by the cluster: the keys a {@link
 * RequestStateCodec} seals and opens with, the same on every node (the leader draws each secret
 * from its CSPRNG inside a replicated command). One key is primary and seals; the others only open,
 * until they are retired. Rotating and retiring are writes, exactly once as every write (the caller
 * needs the admin role when auth is on). As the rest of the client: futures, and {@link
 * #blocking()}.
 */
public final class KeyRing {
  private final Client client;

  KeyRing(Client client) {
    this.client = client;
  }

  /** This key ring with methods that wait. */
  public BlockingKeyRing blocking() {
    return new BlockingKeyRing(this);
  }

  /** The keys, oldest first, without their secrets (a linearizable read). */
  public CompletableFuture<List<RingKey>> list() {
    return list(false);
  }

  /** The keys, oldest first; with {@code includeSecrets}, their secrets too. */
  public CompletableFuture<List<RingKey>> list(boolean includeSecrets) {
    KeyringListRequest req =
        KeyringListRequest.newBuilder()
            .setNamespace(client.namespace())
            .setIncludeSecrets(includeSecrets)
            .setRead(Consistency.LINEARIZABLE.wire())
            .build();
    return Futures.map(
        client.call(AdminGrpc.getKeyringListMethod(), req, null),
        r -> r.getKeysList().stream().map(RingKey::fromWire).toList());
  }

  /**
   * Creates the ring with its first key ({@code AlreadyExistsException} if it has one); gives the
   * key's id.
   */
  public CompletableFuture<String> create() {
    return rotate(true);
  }

  /**
   * A new primary key (the old one stays, to open what it sealed until it is retired; on an empty
   * ring, its first key); gives its id. A ring holds at most 64 keys ({@code
   * PreconditionException}).
   */
  public CompletableFuture<String> rotate() {
    return rotate(false);
  }

  private CompletableFuture<String> rotate(boolean create) {
    return write(
        id ->
            client.call(
                AdminGrpc.getKeyringRotateMethod(),
                KeyringRotateRequest.newBuilder()
                    .setNamespace(client.namespace())
                    .setCreate(create)
                    .setWriteId(id.id())
                    .build(),
                null));
  }

  /**
   * Retires a key that is not the primary ({@code PreconditionException} for the primary, {@code
   * NotFoundException} for an unknown one): it leaves the ring, and what it sealed no longer opens
   * (on a codec that has re-read the ring).
   */
  public CompletableFuture<Void> retire(String keyId) {
    if (keyId == null || keyId.isEmpty()) {
      return CompletableFuture.failedFuture(
          io.github.handlestore.client.errors.HandlestoreException.invalid(
              "key id must not be empty"));
    }
    return Futures.map(
        write(
            id ->
                client.call(
                    AdminGrpc.getKeyringRetireMethod(),
                    KeyringRetireRequest.newBuilder()
                        .setNamespace(client.namespace())
                        .setKeyId(keyId)
                        .setWriteId(id.id())
                        .build(),
                    null)),
        k -> null);
  }

  /** A write of this client's sequence: its id is held until it is answered. */
  private CompletableFuture<String> write(
      Function<WriteIds.Ticket, CompletableFuture<KeyringResponse>> send) {
    WriteIds.Ticket id = client.newWriteId();
    CompletableFuture<KeyringResponse> call;
    try {
      call = send.apply(id);
    } catch (RuntimeException e) {
      id.close();
      return CompletableFuture.failedFuture(e);
    }
    call.whenComplete((r, e) -> id.close());
    return Futures.map(call, KeyringResponse::getKeyId);
  }
}
