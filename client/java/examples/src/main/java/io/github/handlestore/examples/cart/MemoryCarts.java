package io.github.handlestore.examples.cart;

import io.github.handlestore.client.Formats;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;

/**
 * Carts in a map of this process, with their expiry ({@code --kv memory}): what a server without a
 * store does, for the bench. Lost on restart and invisible to a second replica.
 */
final class MemoryCarts implements CartBackend {
  private final Map<String, Held> carts = new ConcurrentHashMap<>();
  private final Map<String, Order> orders = new ConcurrentHashMap<>();
  private final long ttlNanos;

  /** A cart and when it expires ({@link System#nanoTime()}; {@link Long#MAX_VALUE}: never). */
  private record Held(Cart cart, long expires) {
    boolean expired() {
      return expires != Long.MAX_VALUE && System.nanoTime() - expires > 0;
    }
  }

  MemoryCarts(Duration cartTtl) {
    this.ttlNanos = cartTtl.isNegative() || cartTtl.isZero() ? 0 : cartTtl.toNanos();
  }

  @Override
  public String create() {
    String cartId = Formats.newHandleId("cart");
    long expires = ttlNanos == 0 ? Long.MAX_VALUE : System.nanoTime() + ttlNanos;
    carts.put(cartId, new Held(Cart.EMPTY, expires));
    return cartId;
  }

  @Override
  public Optional<Cart> get(String cartId) {
    return change(cartId, UnaryOperator.identity());
  }

  @Override
  public Optional<Cart> add(String cartId, Line line) {
    return change(cartId, c -> c.adding(line));
  }

  @Override
  public Optional<Cart> checkout(String cartId, String candidate) {
    return change(cartId, c -> c.checkingOut(candidate));
  }

  @Override
  public void recordOrder(String orderId, Order order) {
    orders.put(orderId, order);
  }

  /**
   * Applies {@code fn} to a live cart atomically (the map's per-key lock); drops an expired one.
   */
  private Optional<Cart> change(String cartId, UnaryOperator<Cart> fn) {
    CartBackend.checkId(cartId);
    Held after =
        carts.computeIfPresent(
            cartId,
            (id, held) -> held.expired() ? null : new Held(fn.apply(held.cart), held.expires));
    return after == null ? Optional.empty() : Optional.of(after.cart);
  }
}
