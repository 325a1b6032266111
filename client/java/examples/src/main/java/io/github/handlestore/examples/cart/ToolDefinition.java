package io.github.handlestore.examples.cart;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A cart tool as clients list it, the same for both servers: its name, description and input
 * schema, word for word those of the twins.
 *
 * @param name the tool's name
 * @param description what it does
 * @param inputSchema its arguments' JSON schema
 */
public record ToolDefinition(String name, String description, Map<String, Object> inputSchema) {
  public static final String CREATE_CART = "create_cart";
  public static final String ADD_ITEM = "add_item";
  public static final String GET_CART = "get_cart";
  public static final String CHECKOUT = "checkout";

  /** The largest quantity (the Rust and Go twins keep it as a uint32). */
  public static final long MAX_QUANTITY = 4_294_967_295L;

  /** The longest SKU, in characters. */
  public static final int MAX_SKU = 128;

  /** The four tools, in the order they are listed. */
  public static final List<ToolDefinition> ALL =
      List.of(
          new ToolDefinition(
              CREATE_CART,
              "Create an empty shopping cart and return its cart_id.",
              object(new LinkedHashMap<>(), List.of())),
          new ToolDefinition(
              ADD_ITEM,
              "Add quantity units of a SKU to a cart. Returns the cart.",
              object(addItemProperties(), List.of("cart_id", "sku", "quantity"))),
          new ToolDefinition(
              GET_CART,
              "Show a cart's lines and, once checked out, its order_id.",
              object(cartIdProperty(), List.of("cart_id"))),
          new ToolDefinition(
              CHECKOUT,
              "Check a cart out and return its order_id. Calling it again returns the same"
                  + " order_id.",
              object(cartIdProperty(), List.of("cart_id"))));

  private static Map<String, Object> object(Map<String, Object> properties, List<String> required) {
    Map<String, Object> schema = new LinkedHashMap<>();
    schema.put("type", "object");
    schema.put("properties", properties);
    if (!required.isEmpty()) {
      schema.put("required", required);
    }
    return schema;
  }

  private static Map<String, Object> cartIdProperty() {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("cart_id", Map.of("type", "string", "description", "The id create_cart returned."));
    return p;
  }

  private static Map<String, Object> addItemProperties() {
    Map<String, Object> p = cartIdProperty();
    p.put(
        "sku",
        Map.of(
            "type", "string", "minLength", 1, "maxLength", MAX_SKU, "description", "Product SKU."));
    p.put(
        "quantity",
        Map.of(
            "type",
            "integer",
            "minimum",
            1,
            "maximum",
            MAX_QUANTITY,
            "description",
            "How many (at least 1)."));
    p.put(
        "request_id",
        Map.of(
            "type",
            "string",
            "description",
            "Idempotency key: a retried add_item with the same request_id is not added twice."));
    return p;
  }
}
