package io.github.handlestore.examples.cart;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The tools' answers and texts over the in-memory backend (no cluster): what every twin answers for
 * a cart's life, a malformed or unknown id, an empty cart and arguments the schema refuses.
 */
class CartToolsTest {
  private final CartTools tools = new CartTools(new MemoryCarts(Duration.ofHours(1)));

  @Test
  void aCartsLifeAnswersTheTwinsJson() {
    String cartId = ok("create_cart", Map.of()).get("cart_id").toString();
    assertTrue(cartId.matches("cart-[A-Z2-7]{26}"), cartId);
    ToolAnswer added = tools.call("add_item", add(cartId, "a", 2, "r-1"));
    assertEquals(
        "{\"cart_id\":\""
            + cartId
            + "\",\"cart\":{\"lines\":[{\"sku\":\"a\",\"quantity\":2,\"request_id\":\"r-1\"}]}}",
        added.text());
    // The same request_id again: not added twice.
    assertEquals(added.text(), tools.call("add_item", add(cartId, "a", 2, "r-1")).text());
    ok("add_item", add(cartId, "b", 1, null));

    Map<String, Object> order = ok("checkout", Map.of("cart_id", cartId));
    assertEquals(List.of("cart_id", "order_id", "lines"), List.copyOf(order.keySet()));
    assertEquals(2, order.get("lines"));
    assertEquals(order, ok("checkout", Map.of("cart_id", cartId)), "checkout again: same order");
    assertEquals(
        "cart " + cartId + " is already checked out (order " + order.get("order_id") + ")",
        refused("add_item", add(cartId, "c", 1, null)));
    assertTrue(
        tools
            .call("get_cart", Map.of("cart_id", cartId))
            .text()
            .endsWith("\"order_id\":\"" + order.get("order_id") + "\"}}"));
    assertEquals(
        "{\"lines\":[{\"sku\":\"a\",\"quantity\":2,\"request_id\":\"r-1\"},{\"sku\":\"b\","
            + "\"quantity\":1}],\"order_id\":\""
            + order.get("order_id")
            + "\"}",
        tools.readResource(CartTools.CART_URI + cartId).orElseThrow());
  }

  @Test
  void unknownAndMalformedIdsAndEmptyCartsAreRefusedWithTheTwinsTexts() {
    assertEquals(
        "unknown cart_id: ../etc/passwd", refused("get_cart", Map.of("cart_id", "../etc/passwd")));
    String absent = "cart-AAAAAAAAAAAAAAAAAAAAAAAAAA";
    assertEquals("unknown cart_id: " + absent, refused("get_cart", Map.of("cart_id", absent)));
    assertEquals("unknown cart_id: nope", refused("add_item", add("nope", "x", 1, null)));
    assertEquals("unknown cart_id: " + absent, refused("checkout", Map.of("cart_id", absent)));
    String empty = ok("create_cart", Map.of()).get("cart_id").toString();
    assertEquals("cart " + empty + " is empty", refused("checkout", Map.of("cart_id", empty)));
    assertTrue(tools.readResource(CartTools.CART_URI + absent).isEmpty());
    assertTrue(tools.readResource("file:///etc/passwd").isEmpty());
  }

  @Test
  void argumentsTheSchemaRefusesAreRefusedBeforeTheStore() {
    String cartId = ok("create_cart", Map.of()).get("cart_id").toString();
    assertEquals("quantity must be at least 1", refused("add_item", add(cartId, "x", 0, null)));
    assertEquals(
        "quantity must be at most 4294967295",
        refused("add_item", add(cartId, "x", 4_294_967_296L, null)));
    assertEquals(
        "quantity must be a whole number",
        refused("add_item", Map.of("cart_id", cartId, "sku", "x", "quantity", 1.5)));
    assertEquals("sku must be 1 to 128 characters", refused("add_item", add(cartId, "", 1, null)));
    assertEquals(
        "sku must be 1 to 128 characters",
        refused("add_item", add(cartId, "x".repeat(129), 1, null)));
    assertEquals("cart_id must be a string", refused("get_cart", Map.of("cart_id", 7)));
    assertEquals("cart_id must be a string", refused("checkout", Map.of()));
    assertEquals(
        "request_id must be a string",
        refused("add_item", Map.of("cart_id", cartId, "sku", "x", "quantity", 1, "request_id", 3)));
    assertEquals(
        "{\"cart_id\":\"" + cartId + "\",\"cart\":{\"lines\":[]}}",
        tools.call("get_cart", Map.of("cart_id", cartId)).text(),
        "nothing was added");
  }

  @Test
  void aStoreFailureSaysTheCallMayBeRetried() {
    CartTools failing = new CartTools(new DownStore());
    ToolAnswer a = failing.call("create_cart", Map.of());
    assertTrue(a.isError());
    assertEquals("cart store unavailable, retry: no leader", a.text());
    String absent = "cart-AAAAAAAAAAAAAAAAAAAAAAAAAA";
    assertEquals(
        "cart store unavailable, retry: no leader",
        failing.call("get_cart", Map.of("cart_id", absent)).text());
  }

  @Test
  void everyToolIsDefinedAsTheTwinsDefineIt() {
    assertEquals(
        List.of("create_cart", "add_item", "get_cart", "checkout"),
        ToolDefinition.ALL.stream().map(ToolDefinition::name).toList());
    Map<String, Object> addSchema = ToolDefinition.ALL.get(1).inputSchema();
    assertEquals(List.of("cart_id", "sku", "quantity"), addSchema.get("required"));
    assertEquals(
        Map.of(
            "type",
            "object",
            "properties",
            Map.of(
                "cart_id", Map.of("type", "string", "description", "The id create_cart returned.")),
            "required",
            List.of("cart_id")),
        ToolDefinition.ALL.get(3).inputSchema());
  }

  /** A store that has lost its quorum. */
  private static final class DownStore implements CartBackend {
    @Override
    public String create() {
      throw new IllegalStateException("no leader");
    }

    @Override
    public Optional<Cart> get(String cartId) {
      throw new IllegalStateException("no leader");
    }

    @Override
    public Optional<Cart> add(String cartId, Line line) {
      throw new IllegalStateException("no leader");
    }

    @Override
    public Optional<Cart> checkout(String cartId, String candidate) {
      throw new IllegalStateException("no leader");
    }

    @Override
    public void recordOrder(String orderId, Order order) {
      throw new IllegalStateException("no leader");
    }
  }

  private Map<String, Object> ok(String tool, Map<String, Object> args) {
    ToolAnswer a = tools.call(tool, args);
    assertFalse(a.isError(), tool + ": " + a.text());
    return a.structured();
  }

  private String refused(String tool, Map<String, Object> args) {
    ToolAnswer a = tools.call(tool, args);
    assertTrue(a.isError(), tool + " should fail: " + a.text());
    return a.text();
  }

  private static Map<String, Object> add(String cartId, String sku, long quantity, String req) {
    return req == null
        ? Map.of("cart_id", cartId, "sku", sku, "quantity", quantity)
        : Map.of("cart_id", cartId, "sku", sku, "quantity", quantity, "request_id", req);
  }
}
