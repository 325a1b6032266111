package io.github.handlestore.examples.cart;

import java.util.Map;

/**
 * A tool call's arguments, checked against the input schema before the store is asked: both SDK
 * servers validate the schema too, but a tool does not rely on its caller's checks. A bad argument
 * is a tool error (the Rust twin's texts where it has one).
 */
final class ToolArguments {
  private final Map<String, Object> args;

  ToolArguments(Map<String, Object> args) {
    this.args = args == null ? Map.of() : args;
  }

  String cartId() {
    return string("cart_id");
  }

  String sku() {
    String sku = string("sku");
    int length = sku.codePointCount(0, sku.length());
    if (length < 1 || length > ToolDefinition.MAX_SKU) {
      throw new Refused("sku must be 1 to " + ToolDefinition.MAX_SKU + " characters");
    }
    return sku;
  }

  long quantity() {
    Object v = args.get("quantity");
    if (!(v instanceof Number n) || n.doubleValue() != Math.rint(n.doubleValue())) {
      throw new Refused("quantity must be a whole number");
    }
    long q = n.longValue();
    if (q < 1) {
      throw new Refused("quantity must be at least 1");
    }
    if (q > ToolDefinition.MAX_QUANTITY || n.doubleValue() > ToolDefinition.MAX_QUANTITY) {
      throw new Refused("quantity must be at most " + ToolDefinition.MAX_QUANTITY);
    }
    return q;
  }

  /** The idempotency key, or null. */
  String requestId() {
    Object v = args.get("request_id");
    if (v != null && !(v instanceof String)) {
      throw new Refused("request_id must be a string");
    }
    return (String) v;
  }

  private String string(String name) {
    Object v = args.get(name);
    if (!(v instanceof String s)) {
      throw new Refused(name + " must be a string");
    }
    return s;
  }

  /** An argument the schema refuses. */
  static final class Refused extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Refused(String message) {
      super(message, null, false, false);
    }
  }
}
