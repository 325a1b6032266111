package io.github.handlestore.examples.cart;

import io.github.handlestore.client.Formats;
import io.github.handlestore.client.errors.InvalidArgumentException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The four cart tools, written once over a {@link CartBackend} and served by both MCP servers
 * (modern and legacy): the twins' behaviour and texts. {@code add_item} adds a line atomically, so
 * replicas adding to one cart at once never lose one; a {@code request_id} makes a retried add a
 * no-op; {@code checkout} records one order per cart however often, and on whichever replica, it is
 * called. A malformed or unknown cart id is "unknown cart_id: ..."; a store failure says it may be
 * retried.
 */
public final class CartTools {
  /** The scheme of the cart resources ({@code cart://<cart_id>}). */
  public static final String CART_URI = "cart://";

  private final CartBackend backend;

  public CartTools(CartBackend backend) {
    this.backend = backend;
  }

  /** Calls {@code tool} (one of {@link ToolDefinition#ALL}) with {@code arguments}. */
  public ToolAnswer call(String tool, Map<String, Object> arguments) {
    ToolArguments args = new ToolArguments(arguments);
    try {
      return switch (tool) {
        case ToolDefinition.CREATE_CART -> createCart();
        case ToolDefinition.ADD_ITEM -> addItem(args);
        case ToolDefinition.GET_CART -> getCart(args.cartId());
        case ToolDefinition.CHECKOUT -> checkout(args.cartId());
        default -> throw new IllegalStateException("no tool " + tool);
      };
    } catch (ToolArguments.Refused e) {
      return ToolAnswer.error(e.getMessage());
    }
  }

  /** The cart {@code uri} names, as the resource shows it; empty if there is none. */
  public Optional<String> readResource(String uri) {
    if (uri == null || !uri.startsWith(CART_URI)) {
      return Optional.empty();
    }
    try {
      return backend.get(uri.substring(CART_URI.length())).map(CartJson::text);
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  private ToolAnswer createCart() {
    try {
      return ToolAnswer.ok(Map.of("cart_id", backend.create()));
    } catch (RuntimeException e) {
      return unavailable(e);
    }
  }

  private ToolAnswer addItem(ToolArguments args) {
    String cartId = args.cartId();
    Line line = new Line(args.sku(), args.quantity(), args.requestId());
    return withCart(
        cartId,
        () -> backend.add(cartId, line),
        cart ->
            cart.checkedOut()
                ? ToolAnswer.error(
                    "cart " + cartId + " is already checked out (order " + cart.orderId() + ")")
                : shown(cartId, cart));
  }

  private ToolAnswer getCart(String cartId) {
    return withCart(cartId, () -> backend.get(cartId), cart -> shown(cartId, cart));
  }

  private ToolAnswer checkout(String cartId) {
    String candidate = Formats.newHandleId("order");
    return withCart(
        cartId,
        () -> backend.checkout(cartId, candidate),
        cart -> {
          if (!cart.checkedOut()) {
            return ToolAnswer.error(
                cart.lines().isEmpty()
                    ? "cart " + cartId + " is empty"
                    : "checkout did not record an order; retry");
          }
          // Whichever call recorded the order writes it; a repeat writes the same content again.
          try {
            backend.recordOrder(cart.orderId(), new Order(cartId, cart.lines()));
          } catch (RuntimeException e) {
            return storeError(cartId, e);
          }
          Map<String, Object> out = new LinkedHashMap<>();
          out.put("cart_id", cartId);
          out.put("order_id", cart.orderId());
          out.put("lines", cart.lines().size());
          return ToolAnswer.ok(out);
        });
  }

  /** Runs a store call, answering an absent cart and a failure as the twins do. */
  private static ToolAnswer withCart(
      String cartId, Supplier<Optional<Cart>> call, Function<Cart, ToolAnswer> then) {
    Optional<Cart> cart;
    try {
      cart = call.get();
    } catch (RuntimeException e) {
      return storeError(cartId, e);
    }
    return cart.map(then).orElseGet(() -> ToolAnswer.error("unknown cart_id: " + cartId));
  }

  private static ToolAnswer shown(String cartId, Cart cart) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("cart_id", cartId);
    out.put("cart", CartJson.tree(cart));
    return ToolAnswer.ok(out);
  }

  /** A malformed id is an unknown cart; anything else may be retried. */
  private static ToolAnswer storeError(String cartId, RuntimeException e) {
    return e instanceof InvalidArgumentException
        ? ToolAnswer.error("unknown cart_id: " + cartId)
        : unavailable(e);
  }

  private static ToolAnswer unavailable(RuntimeException e) {
    return ToolAnswer.error("cart store unavailable, retry: " + e.getMessage());
  }
}
