package io.github.handlestore.examples.cart;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
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
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Redis backend ({@code --kv redis}) against a real redis-server on loopback (skipped, saying
 * why, where there is none): the twins' layout (a key per cart with its TTL, {@code order-of} set
 * once, {@code order:<id>}), adds from many threads kept through WATCH/MULTI, one order however
 * many checkouts race.
 */
class RedisCartsTest {
  private static final Duration TTL = Duration.ofMinutes(10);

  private static Process server;
  private static RedisCarts carts;
  private static CartTools tools;
  private static RedisClient raw;
  private static StatefulRedisConnection<String, String> conn;

  @BeforeAll
  static void redis() throws Exception {
    // $REDIS_SERVER, else redis-server on the PATH.
    String found = System.getenv().getOrDefault("REDIS_SERVER", "redis-server");
    if (!Files.isExecutable(Path.of(found)) && !onPath(found)) {
      System.out.println("SKIPPED: the cart server's Redis backend: redis-server is not installed");
      Assumptions.abort("redis-server is not installed");
    }
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    server =
        new ProcessBuilder(
                found,
                "--port",
                String.valueOf(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no")
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    awaitPort(port);
    String url = "redis://127.0.0.1:" + port + "/";
    carts = RedisCarts.connect(url, TTL);
    tools = new CartTools(carts);
    raw = RedisClient.create(url);
    conn = raw.connect();
  }

  @AfterAll
  static void stop() {
    if (carts != null) {
      carts.close();
      conn.close();
      raw.shutdown();
    }
    if (server != null) {
      server.destroy();
    }
  }

  @Test
  void concurrentAddsAreKeptAndOneOrderIsRecorded() throws Exception {
    RedisCommands<String, String> r = conn.sync();
    String cartId = ok("create_cart", Map.of()).get("cart_id").toString();
    long pttl = r.pttl("cart:" + cartId);
    assertTrue(pttl > 0 && pttl <= TTL.toMillis(), "the cart key has the carts' TTL: " + pttl);
    assertEquals("{\"lines\":[]}", r.get("cart:" + cartId));

    concurrently(
        16, i -> ok("add_item", Map.of("cart_id", cartId, "sku", "c-" + i, "quantity", 1)));
    ok("add_item", Map.of("cart_id", cartId, "sku", "g", "quantity", 1, "request_id", "k"));
    ok("add_item", Map.of("cart_id", cartId, "sku", "g", "quantity", 1, "request_id", "k"));
    assertEquals(17, carts.get(cartId).orElseThrow().lines().size(), "every add kept, once");
    assertTrue(r.pttl("cart:" + cartId) > 0, "adds keep the cart's TTL");

    List<Map<String, Object>> orders =
        concurrently(8, i -> ok("checkout", Map.of("cart_id", cartId)));
    Set<Object> ids = orders.stream().map(o -> o.get("order_id")).collect(Collectors.toSet());
    assertEquals(1, ids.size(), "one order: " + orders);
    String orderId = ids.iterator().next().toString();
    assertEquals(orderId, r.get("order-of:" + cartId));
    assertTrue(r.pttl("order-of:" + cartId) > 0, "the order mark expires with the cart");
    assertTrue(r.get("order:" + orderId).startsWith("{\"cart_id\":\"" + cartId + "\""));
    assertEquals(
        "cart " + cartId + " is already checked out (order " + orderId + ")",
        tools.call("add_item", Map.of("cart_id", cartId, "sku", "late", "quantity", 1)).text());
    assertEquals(17, carts.get(cartId).orElseThrow().lines().size(), "no add after the checkout");
  }

  @Test
  void unknownAndMalformedIdsAreRefusedBeforeRedis() {
    assertEquals("unknown cart_id: ../x", tools.call("get_cart", Map.of("cart_id", "../x")).text());
    String absent = "cart-AAAAAAAAAAAAAAAAAAAAAAAAAA";
    assertEquals(
        "unknown cart_id: " + absent, tools.call("checkout", Map.of("cart_id", absent)).text());
    String empty = ok("create_cart", Map.of()).get("cart_id").toString();
    assertEquals(
        "cart " + empty + " is empty", tools.call("checkout", Map.of("cart_id", empty)).text());
    assertFalse(conn.sync().exists("order-of:" + empty) > 0, "an empty cart records no order");
  }

  private static Map<String, Object> ok(String tool, Map<String, Object> args) {
    ToolAnswer a = tools.call(tool, args);
    assertFalse(a.isError(), tool + ": " + a.text());
    return a.structured();
  }

  private static <T> List<T> concurrently(int n, java.util.function.IntFunction<T> call)
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<CompletableFuture<T>> all =
          IntStream.range(0, n)
              .mapToObj(i -> CompletableFuture.supplyAsync(() -> call.apply(i), pool))
              .toList();
      List<T> out = new ArrayList<>();
      for (CompletableFuture<T> f : all) {
        out.add(f.get());
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  private static boolean onPath(String program) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, program))) {
        return true;
      }
    }
    return false;
  }

  private static void awaitPort(int port) throws InterruptedException {
    for (int i = 0; i < 200; i++) {
      try {
        new Socket("127.0.0.1", port).close();
        return;
      } catch (IOException e) {
        Thread.sleep(50);
      }
    }
    throw new IllegalStateException("redis-server did not start on " + port);
  }
}
