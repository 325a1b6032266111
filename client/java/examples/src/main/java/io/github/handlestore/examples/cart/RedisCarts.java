package io.github.handlestore.examples.cart;

import io.github.handlestore.client.Formats;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.SetArgs;
import io.lettuce.core.TransactionResult;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.function.Function;

/**
 * Carts in Redis ({@code --kv redis}), kept as a careful author keeps them, with the layout of the
 * TypeScript twin's Redis backend (client/ts/examples/cartRedis.ts):
 *
 * <ul>
 *   <li>{@code cart:<id>} holds the cart's lines as JSON with the carts' TTL ({@code SET PX NX}
 *       when created, {@code KEEPTTL} on each add);
 *   <li>an add is {@code WATCH}, {@code MGET}, {@code MULTI}/{@code SET}/{@code EXEC}, tried again
 *       when another writer got there first; a {@code WATCH} belongs to a connection, so each
 *       transaction has a connection of its own while it runs (kept idle between transactions);
 *   <li>the checkout is {@code SET NX} of {@code order-of:<id>} (the first one wins, exactly once),
 *       which every add watches too, so that no add lands after it;
 *   <li>the order record is {@code order:<order_id>}.
 * </ul>
 *
 * Plain reads and writes share one connection (Lettuce's connections are thread-safe).
 */
final class RedisCarts implements CartBackend {
  private static final String EMPTY_LINES = "{\"lines\":[]}";

  private final RedisClient redis;
  private final StatefulRedisConnection<String, String> shared;
  private final Deque<StatefulRedisConnection<String, String>> idle = new ConcurrentLinkedDeque<>();
  private final Duration cartTtl;

  private RedisCarts(RedisClient redis, Duration cartTtl) {
    this.redis = redis;
    this.shared = redis.connect();
    this.cartTtl = cartTtl;
  }

  /** Carts in the Redis at {@code url} ({@code redis://host:port/}). */
  static RedisCarts connect(String url, Duration cartTtl) {
    return new RedisCarts(RedisClient.create(url), cartTtl);
  }

  @Override
  public String create() {
    while (true) {
      String cartId = Formats.newHandleId("cart");
      if ("OK".equals(shared.sync().set(cartKey(cartId), EMPTY_LINES, setNew()))) {
        return cartId;
      }
    }
  }

  @Override
  public Optional<Cart> get(String cartId) {
    CartBackend.checkId(cartId);
    return shown(shared.sync().mget(cartKey(cartId), orderOfKey(cartId)));
  }

  @Override
  public Optional<Cart> add(String cartId, Line line) {
    CartBackend.checkId(cartId);
    return transacting(c -> addOn(c, cartId, line));
  }

  private Optional<Cart> addOn(RedisCommands<String, String> c, String cartId, Line line) {
    String[] keys = {cartKey(cartId), orderOfKey(cartId)};
    while (true) {
      c.watch(keys);
      Optional<Cart> cart = shown(c.mget(keys));
      Cart next = cart.map(x -> x.adding(line)).orElse(null);
      if (next == null || next == cart.get()) {
        c.unwatch();
        return cart;
      }
      c.multi();
      c.set(keys[0], CartJson.text(new Cart(next.lines(), null)), SetArgs.Builder.keepttl());
      // EXEC is discarded if a watched key changed since WATCH: read again.
      if (!c.exec().wasDiscarded()) {
        return Optional.of(next);
      }
    }
  }

  @Override
  public Optional<Cart> checkout(String cartId, String candidate) {
    Optional<Cart> cart = get(cartId);
    if (cart.isEmpty() || cart.get().checkingOut(candidate) == cart.get()) {
      return cart;
    }
    // Atomically: the first SET NX wins; the cart as it is then (no add lands after order-of is
    // set), with whichever order won.
    return transacting(
        c -> {
          c.multi();
          c.set(orderOfKey(cartId), candidate, setNew());
          c.get(orderOfKey(cartId));
          c.get(cartKey(cartId));
          TransactionResult r = c.exec();
          return shown(answer(r, 2), answer(r, 1));
        });
  }

  @Override
  public void recordOrder(String orderId, Order order) {
    shared.sync().set("order:" + orderId, CartJson.text(order));
  }

  @Override
  public void close() {
    for (StatefulRedisConnection<String, String> c; (c = idle.poll()) != null; ) {
      c.close();
    }
    shared.close();
    redis.shutdown();
  }

  /** SET's arguments for a new key: NX, with the carts' TTL if they have one. */
  private SetArgs setNew() {
    SetArgs args = SetArgs.Builder.nx();
    return cartTtl.isNegative() || cartTtl.isZero()
        ? args
        : args.px(Math.max(1, cartTtl.toMillis()));
  }

  /** Runs {@code fn} on an idle transaction connection (a new one if none); drops a failed one. */
  private <R> R transacting(Function<RedisCommands<String, String>, R> fn) {
    StatefulRedisConnection<String, String> conn = idle.poll();
    if (conn == null) {
      conn = redis.connect();
    }
    try {
      R r = fn.apply(conn.sync());
      idle.push(conn);
      return r;
    } catch (RuntimeException e) {
      conn.closeAsync();
      throw e;
    }
  }

  private static String cartKey(String cartId) {
    return "cart:" + cartId;
  }

  private static String orderOfKey(String cartId) {
    return "order-of:" + cartId;
  }

  /** Reply {@code i} of a transaction; a command's error is thrown. */
  private static String answer(TransactionResult r, int i) {
    Object v = r.get(i);
    if (v instanceof RuntimeException e) {
      throw e;
    }
    return (String) v;
  }

  /** The cart of an {@code MGET cart:<id> order-of:<id>}. */
  private static Optional<Cart> shown(List<KeyValue<String, String>> cartAndOrder) {
    return shown(
        cartAndOrder.get(0).getValueOrElse(null), cartAndOrder.get(1).getValueOrElse(null));
  }

  /** A cart as stored (its lines) with its order, if one was recorded. */
  private static Optional<Cart> shown(String json, String orderId) {
    if (json == null) {
      return Optional.empty();
    }
    Cart stored = CartJson.read(json, Cart.class);
    return Optional.of(new Cart(stored.lines(), orderId));
  }
}
