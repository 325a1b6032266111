package io.github.handlestore.examples.cart;

import io.github.handlestore.client.BlockingHandleStore;
import io.github.handlestore.client.Client;
import io.github.handlestore.client.Ttl;
import java.time.Duration;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * Carts as the cluster's handles, in the stores every twin uses: {@code cart} (ids {@code
 * cart-...}, kept the carts' TTL) and {@code order} (never expiring). Adds and checkouts are {@link
 * BlockingHandleStore#update}'s compare-and-set loop, so replicas writing one cart at once never
 * lose a line and record one order.
 */
final class HandlestoreCarts implements CartBackend {
  private final Client client;
  private final BlockingHandleStore<Cart> carts;
  private final BlockingHandleStore<Order> orders;

  HandlestoreCarts(Client client, Duration cartTtl) {
    this.client = client;
    this.carts =
        client
            .handleStore("cart", Cart.class)
            .prefix("cart")
            .defaultTtl(cartTtl)
            .build()
            .blocking();
    this.orders = client.handleStore("order", Order.class).build().blocking();
  }

  @Override
  public String create() {
    return carts.mint(Cart.EMPTY);
  }

  @Override
  public Optional<Cart> get(String cartId) {
    return carts.get(cartId);
  }

  @Override
  public Optional<Cart> add(String cartId, Line line) {
    return update(cartId, c -> c.adding(line));
  }

  @Override
  public Optional<Cart> checkout(String cartId, String candidate) {
    return update(cartId, c -> c.checkingOut(candidate));
  }

  @Override
  public void recordOrder(String orderId, Order order) {
    orders.put(orderId, order, Ttl.NEVER);
  }

  @Override
  public void close() {
    client.close();
  }

  /** {@code update} that writes only what {@code fn} changes (a refused add writes nothing). */
  private Optional<Cart> update(String cartId, UnaryOperator<Cart> fn) {
    try {
      return carts.update(
          cartId,
          c -> {
            Cart next = fn.apply(c);
            if (next == c) {
              throw new Unchanged(c);
            }
            return next;
          });
    } catch (Unchanged u) {
      return Optional.of(u.cart);
    }
  }

  /** Ends an update with nothing to write (an exception from the function ends the loop). */
  private static final class Unchanged extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient Cart cart;

    Unchanged(Cart cart) {
      super("unchanged", null, false, false);
      this.cart = cart;
    }
  }
}
