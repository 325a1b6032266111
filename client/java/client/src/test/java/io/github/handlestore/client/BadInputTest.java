package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.github.handlestore.client.errors.InvalidArgumentException;
import io.github.handlestore.client.errors.Reason;
import io.github.handlestore.client.testkit.FakeNode;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Malformed ids, keys, prefixes, names and endpoints are refused by the client itself, as the node
 * would refuse them (InvalidArgumentException, reason invalid_argument), before any call: the
 * stand-in node behind the client never hears of them.
 */
class BadInputTest {
  @Test
  void malformedInputNeverReachesANode() {
    try (FakeNode node = new FakeNode();
        Client c =
            new Client(
                ClientConfig.builder()
                    .endpoints(node.addr())
                    .callTimeout(Duration.ofSeconds(30))
                    .build())) {
      HandleStore<Cart> carts = c.handleStore("cart", Cart.class).build();
      StateTool tool = c.stateTool();
      List<Supplier<CompletableFuture<?>>> calls =
          List.of(
              () -> carts.get("not-an-id"),
              () -> carts.get("AAAAAAAAAAAAAAAAAAAAAAAAAB"),
              () -> carts.put("cart_MFRGGZDFMZTWQ2LKNNWG23TPOA", new Cart()),
              () -> carts.mintWithId("", new Cart(), Ttl.DEFAULT),
              () -> carts.delete("MFRGGZDFMZTWQ2LKNNWG23TPOA\n"),
              () -> carts.update("short", x -> x),
              () -> tool.store("/leading", 1),
              () -> tool.store("a//b", 1),
              () -> tool.retrieve("a\u0000b"),
              () -> tool.exists(""),
              () -> tool.list("logs/\n", ListOptions.DEFAULT),
              () -> tool.deletePrefix("", 10),
              () -> tool.batchStore(List.of(StoreItem.of("ok", 1), StoreItem.of("bad/", 2))),
              () -> tool.batchRetrieve(List.of("ok", "k".repeat(1025))));
      for (Supplier<CompletableFuture<?>> call : calls) {
        InvalidArgumentException e = error(InvalidArgumentException.class, call.get());
        assertEquals(Reason.INVALID_ARGUMENT, e.reason().orElseThrow(), e.getMessage());
      }
      assertEquals(0, node.calls(), "a malformed request reached the node");
      assertEquals(0, c.writeStats().sent());
      assertEquals(0, c.readStats().sent());
    }
  }

  @Test
  void malformedNamesAndEndpointsAreRefusedWhenMade() {
    try (Client c = new Client(ClientConfig.builder().endpoints("127.0.0.1:1").build())) {
      assertThrows(InvalidArgumentException.class, () -> c.handleStore("a/b", Cart.class));
      assertThrows(
          InvalidArgumentException.class,
          () -> c.handleStore("cart", Cart.class).prefix("c t").build());
      assertThrows(InvalidArgumentException.class, () -> c.withNamespace("caf\u00e9"));
    }
    for (String bad : List.of("localhost", "ftp://h:1", "https://h:1", "h:1/x", "h:port")) {
      assertThrows(
          InvalidArgumentException.class,
          () -> new Client(ClientConfig.builder().endpoints(bad).build()),
          bad);
    }
    assertThrows(InvalidArgumentException.class, () -> new Client(ClientConfig.builder().build()));
    assertThrows(
        InvalidArgumentException.class,
        () -> new Client(ClientConfig.builder().endpoints("h:1").token("a\nb").build()));
  }
}
