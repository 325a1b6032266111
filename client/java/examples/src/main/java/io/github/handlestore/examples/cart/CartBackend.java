package io.github.handlestore.examples.cart;

import io.github.handlestore.client.Formats;
import java.util.Optional;

/**
 * Where the carts and orders live: the tools are written once over it ({@link CartTools}). The
 * cluster's handles ({@link HandlestoreCarts}), Redis as a careful author keeps it ({@link
 * RedisCarts}) and a map of this process ({@link MemoryCarts}) answer alike, so the bench compares
 * stores and not servers.
 *
 * <p>Each call throws the client's {@code InvalidArgumentException} for a malformed cart id (the
 * tools answer it as an unknown cart), and any other exception when the store fails (the tools
 * answer that it may be retried). Calls block: the SDK runs a synchronous tool on the request's
 * servlet thread.
 */
public interface CartBackend extends AutoCloseable {
  /** A new empty cart, kept the carts' TTL; its id ({@code cart-<26 chars>}). */
  String create();

  /** The cart, or empty if there is none (never made, or expired). */
  Optional<Cart> get(String cartId);

  /** Applies {@link Cart#adding} atomically; the cart after, or empty if there is none. */
  Optional<Cart> add(String cartId, Line line);

  /**
   * Applies {@link Cart#checkingOut} atomically, so that one order is recorded per cart however
   * many replicas check it out at once; the cart after, or empty if there is none.
   */
  Optional<Cart> checkout(String cartId, String candidate);

  /** Writes the order record (a repeated checkout writes the same content again). */
  void recordOrder(String orderId, Order order);

  /** Lets go of the store's connections. */
  @Override
  default void close() {}

  /** Throws the client's {@code InvalidArgumentException} unless {@code cartId} is a handle id. */
  static void checkId(String cartId) {
    Formats.handleIdProblem(cartId)
        .ifPresent(
            e -> {
              throw e;
            });
  }
}
