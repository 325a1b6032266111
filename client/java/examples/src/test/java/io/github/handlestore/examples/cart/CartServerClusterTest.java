package io.github.handlestore.examples.cart;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.handlestore.client.Client;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.SharedCluster;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.client.McpClient;
import io.modelcontextprotocol.modern.client.McpSyncClient;
import io.modelcontextprotocol.modern.client.transport.HttpClientMcpTransport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two replicas of the Java cart server on one cluster behind a round-robin balancer, driven by the
 * MCP Java SDK's own client (the modern one, protocol 2026-07-28), each call to the other replica:
 * every item kept, concurrent adds kept, one order, checkout exactly once, unknown and malformed
 * cart ids refused with the twins' texts, and carts stored as the twins store them.
 */
class CartServerClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  private static final String NS = "examples-cart";

  private static Client client;
  private static CartReplica a;
  private static CartReplica b;
  private static RoundRobin lb;
  private static McpSyncClient mcp;

  @BeforeAll
  static void replicas() throws Exception {
    Cluster cluster = CLUSTER.get();
    client = cluster.client(NS, c -> {});
    a = CartReplica.start(cluster, NS, "A");
    b = CartReplica.start(cluster, NS, "B");
    lb = new RoundRobin(List.of(a, b));
    mcp =
        McpClient.sync(HttpClientMcpTransport.builder(lb.url()).build())
            .clientInfo(McpSchema.Implementation.builder("cart-test", "1").build())
            .roundTimeout(Duration.ofSeconds(30))
            .build();
  }

  @AfterAll
  static void stop() {
    if (lb != null) {
      lb.close();
    }
    for (CartReplica r : new CartReplica[] {a, b}) {
      if (r != null) {
        r.close();
      }
    }
    if (client != null) {
      client.close();
    }
  }

  @Test
  void everyItemKeptOneOrderCheckoutExactlyOnce() throws Exception {
    long ordersBefore = client.handleStore("order", JsonNode.class).build().blocking().len();
    String cartId = ok("create_cart", Map.of()).get("cart_id").toString();
    assertTrue(cartId.matches("cart-[A-Z2-7]{26}"), cartId);
    for (int i = 1; i <= 6; i++) {
      ok("add_item", Map.of("cart_id", cartId, "sku", "sku-" + i, "quantity", i));
    }
    // A retried add (same request_id), once on each replica: added once.
    for (int i = 0; i < 2; i++) {
      ok("add_item", Map.of("cart_id", cartId, "sku", "gift", "quantity", 1, "request_id", "r-1"));
    }
    // Concurrent adds, eight across the two replicas.
    concurrently(8, i -> ok("add_item", Map.of("cart_id", cartId, "sku", "c-" + i, "quantity", 1)));

    List<String> skus = skus(ok("get_cart", Map.of("cart_id", cartId)));
    assertEquals(
        List.of("sku-1", "sku-2", "sku-3", "sku-4", "sku-5", "sku-6", "gift"), skus.subList(0, 7));
    assertEquals(
        IntStream.range(0, 8).mapToObj(i -> "c-" + i).collect(Collectors.toSet()),
        Set.copyOf(skus.subList(7, skus.size())));
    assertEquals(15, skus.size(), "every item kept, the retried one once: " + skus);

    // Concurrent checkouts on both replicas, then more one after another: one order.
    List<Map<String, Object>> orders =
        concurrently(4, i -> ok("checkout", Map.of("cart_id", cartId)));
    for (int i = 0; i < 4; i++) {
      orders.add(ok("checkout", Map.of("cart_id", cartId)));
    }
    Set<Object> orderIds = orders.stream().map(o -> o.get("order_id")).collect(Collectors.toSet());
    assertEquals(1, orderIds.size(), "one order: " + orders);
    assertTrue(orders.stream().allMatch(o -> ((Number) o.get("lines")).intValue() == 15));
    String orderId = orderIds.iterator().next().toString();
    assertEquals(
        "cart " + cartId + " is already checked out (order " + orderId + ")",
        refused("add_item", Map.of("cart_id", cartId, "sku", "late", "quantity", 1)));

    var orderStore = client.handleStore("order", JsonNode.class).build().blocking();
    JsonNode order = orderStore.get(orderId).orElseThrow();
    assertEquals(cartId, order.get("cart_id").asText());
    assertEquals(15, order.get("lines").size());
    assertEquals(ordersBefore + 1, orderStore.len(), "exactly one order recorded");
    assertServedByBoth("add_item", "get_cart", "checkout");
  }

  @Test
  void cartsAreStoredAsTheTwinsStoreThem() {
    String cartId = ok("create_cart", Map.of()).get("cart_id").toString();
    ok("add_item", Map.of("cart_id", cartId, "sku", "a", "quantity", 2, "request_id", "k"));
    ok("add_item", Map.of("cart_id", cartId, "sku", "b", "quantity", 1));
    String orderId = ok("checkout", Map.of("cart_id", cartId)).get("order_id").toString();
    JsonNode stored =
        client.handleStore("cart", JsonNode.class).build().blocking().get(cartId).orElseThrow();
    assertEquals(
        "{\"lines\":[{\"sku\":\"a\",\"quantity\":2,\"request_id\":\"k\"},"
            + "{\"sku\":\"b\",\"quantity\":1}],\"order_id\":\""
            + orderId
            + "\"}",
        stored.toString());
    assertTrue(orderId.matches("order-[A-Z2-7]{26}"), orderId);
  }

  @Test
  void badIdsAndEmptyCartsAreRefusedAlikeByBothReplicas() {
    // Two rounds of three calls: each kind reaches each replica.
    for (int i = 0; i < 2; i++) {
      assertEquals(
          "unknown cart_id: ../etc/passwd",
          refused("get_cart", Map.of("cart_id", "../etc/passwd")));
      String absent = "cart-AAAAAAAAAAAAAAAAAAAAAAAAAA";
      assertEquals("unknown cart_id: " + absent, refused("get_cart", Map.of("cart_id", absent)));
      assertEquals(
          "unknown cart_id: nope",
          refused("add_item", Map.of("cart_id", "nope", "sku", "x", "quantity", 1)));
    }
    for (int i = 0; i < 2; i++) {
      String empty = ok("create_cart", Map.of()).get("cart_id").toString();
      assertEquals("cart " + empty + " is empty", refused("checkout", Map.of("cart_id", empty)));
    }
    assertEquals("unknown cart_id: nope", refused("checkout", Map.of("cart_id", "nope")));
  }

  @Test
  void aHandshakeEraClientIsServedByBothReplicasToo() {
    String base = lb.url().substring(0, lb.url().length() - "/mcp".length());
    io.modelcontextprotocol.client.McpSyncClient legacy =
        io.modelcontextprotocol.client.McpClient.sync(
                HttpClientStreamableHttpTransport.builder(base).endpoint("/mcp").build())
            .requestTimeout(Duration.ofSeconds(30))
            .build();
    try {
      assertEquals("2025-11-25", legacy.initialize().protocolVersion());
      java.util.function.BiFunction<String, Map<String, Object>, Map<String, Object>> call =
          (tool, args) -> {
            var r =
                legacy.callTool(
                    io.modelcontextprotocol.spec.McpSchema.CallToolRequest.builder(tool)
                        .arguments(args)
                        .build());
            assertFalse(Boolean.TRUE.equals(r.isError()), tool + ": " + r.content());
            @SuppressWarnings("unchecked")
            Map<String, Object> out = (Map<String, Object>) r.structuredContent();
            return out;
          };
      String cartId = call.apply("create_cart", Map.of()).get("cart_id").toString();
      call.apply("add_item", Map.of("cart_id", cartId, "sku", "x", "quantity", 1));
      call.apply("add_item", Map.of("cart_id", cartId, "sku", "y", "quantity", 2));
      assertEquals(List.of("x", "y"), skus(call.apply("get_cart", Map.of("cart_id", cartId))));
      Object first = call.apply("checkout", Map.of("cart_id", cartId)).get("order_id");
      assertEquals(first, call.apply("checkout", Map.of("cart_id", cartId)).get("order_id"));
    } finally {
      legacy.closeGracefully();
    }
    assertServedByBoth("add_item", "checkout");
  }

  /** A tool call that must succeed: its structured content. */
  @SuppressWarnings("unchecked")
  private static Map<String, Object> ok(String tool, Map<String, Object> args) {
    McpSchema.CallToolResult r = mcp.tool(tool).arguments(args).call();
    assertFalse(Boolean.TRUE.equals(r.isError()), tool + ": " + text(r));
    return new java.util.HashMap<>((Map<String, Object>) r.structuredContent());
  }

  /** A tool call that must be refused: its error text. */
  private static String refused(String tool, Map<String, Object> args) {
    McpSchema.CallToolResult r = mcp.tool(tool).arguments(args).call();
    assertTrue(Boolean.TRUE.equals(r.isError()), tool + " should fail: " + text(r));
    return text(r);
  }

  private static String text(McpSchema.CallToolResult r) {
    return ((McpSchema.TextContent) r.content().get(0)).text();
  }

  @SuppressWarnings("unchecked")
  private static List<String> skus(Map<String, Object> shown) {
    Map<String, Object> cart = (Map<String, Object>) shown.get("cart");
    List<Map<String, Object>> lines = (List<Map<String, Object>>) cart.get("lines");
    return lines.stream().map(l -> l.get("sku").toString()).toList();
  }

  /** {@code n} calls at once; their answers. */
  private static <T> List<T> concurrently(int n, java.util.function.IntFunction<T> call)
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<CompletableFuture<T>> all = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int k = i;
        all.add(CompletableFuture.supplyAsync(() -> call.apply(k), pool));
      }
      List<T> out = new ArrayList<>();
      for (CompletableFuture<T> f : all) {
        out.add(f.get());
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  private static void assertServedByBoth(String... tools) {
    for (String tool : tools) {
      Set<String> served =
          lb.hits().stream()
              .filter(h -> h.tool().equals(tool))
              .map(RoundRobin.Hit::replica)
              .collect(Collectors.toSet());
      assertEquals(Set.of("A", "B"), served, tool + " was served by " + served);
    }
    assertTrue(lb.hits().stream().allMatch(h -> h.status() == 200), "every call answered 200");
  }
}
