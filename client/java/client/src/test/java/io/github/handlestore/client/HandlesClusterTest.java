package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.errors.AlreadyExistsException;
import io.github.handlestore.client.errors.NotFoundException;
import io.github.handlestore.client.errors.Reason;
import io.github.handlestore.client.errors.RevisionMismatchException;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.SharedCluster;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** HandleStore on a real cluster: mcpkit's semantics, compare-and-set, coalescing and TTLs. */
class HandlesClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  static Client client;

  @BeforeAll
  static void connect() {
    client = CLUSTER.get().client("java-handles", b -> {});
  }

  @AfterAll
  static void close() {
    if (client != null) {
      client.close();
    }
  }

  @Test
  void mintedOnOneNodeReadFromEveryNode() {
    HandleStore<Cart> carts = client.handleStore("cart", Cart.class).prefix("cart").build();
    String id = value(carts.mint(Cart.of("sku-1")));
    assertTrue(id.startsWith("cart-"), id);
    Cluster cluster = CLUSTER.get();
    for (String ep : cluster.endpoints()) {
      try (Client one = cluster.client("java-handles", b -> b.endpoints(ep))) {
        Cart got = one.handleStore("cart", Cart.class).build().blocking().get(id).orElseThrow();
        assertEquals(List.of("sku-1"), got.items, ep);
      }
    }
    assertEquals(1L, value(carts.len()));
  }

  @Test
  void anUnknownHandleIsAbsentNotAnError() {
    BlockingHandleStore<Cart> carts = client.handleStore("unknown", Cart.class).build().blocking();
    String id = Formats.newHandleId("");
    assertTrue(carts.get(id).isEmpty());
    assertFalse(carts.delete(id));
    assertTrue(carts.update(id, c -> c).isEmpty());
    error(
        NotFoundException.class,
        carts.async().putWith(id, new Cart(), PutOptions.DEFAULT.withExpectedRevision(5)));
  }

  @Test
  void aCompareAndSetThatLostCarriesItsReasonAndTheRevision() {
    HandleStore<Cart> carts = client.handleStore("cas", Cart.class).build();
    String id = value(carts.mint(new Cart()));
    Versioned<Cart> v = value(carts.getVersioned(id)).orElseThrow();
    WriteOutcome now =
        value(
            carts.putWith(
                id, Cart.of("a"), PutOptions.DEFAULT.withExpectedRevision(v.modRevision())));
    RevisionMismatchException lost =
        error(
            RevisionMismatchException.class,
            carts.putWith(
                id, Cart.of("b"), PutOptions.DEFAULT.withExpectedRevision(v.modRevision())));
    assertEquals(Reason.REVISION_MISMATCH, lost.reason().orElseThrow());
    assertEquals(Status.Code.FAILED_PRECONDITION, lost.code());
    assertEquals(now.revision(), lost.currentRevision());
    assertFalse(lost.getMessage().isEmpty());
    AlreadyExistsException again =
        error(AlreadyExistsException.class, carts.mintWithId(id, new Cart(), Ttl.DEFAULT));
    assertEquals(Reason.ALREADY_EXISTS, again.reason().orElseThrow());
    assertEquals(List.of("a"), value(carts.get(id)).orElseThrow().items);
  }

  @Test
  void concurrentUpdatesLoseNothing() {
    HandleStore<Cart> carts = client.handleStore("update", Cart.class).build();
    String id = value(carts.mint(new Cart(), Duration.ofHours(1)));
    List<Client> others = new ArrayList<>();
    List<CompletableFuture<?>> writers = new ArrayList<>();
    try {
      for (int w = 0; w < 4; w++) {
        Client other = CLUSTER.get().client("java-handles", b -> {});
        others.add(other);
        HandleStore<Cart> store = other.handleStore("update", Cart.class).build();
        int writer = w;
        writers.add(
            CompletableFuture.runAsync(
                () -> {
                  for (int i = 0; i < 5; i++) {
                    String item = writer + "-" + i;
                    store.blocking().update(id, c -> c.add(item)).orElseThrow();
                  }
                }));
      }
      writers.forEach(f -> value(f));
    } finally {
      others.forEach(Client::close);
    }
    Versioned<Cart> got = value(carts.getVersioned(id)).orElseThrow();
    assertEquals(20, new HashSet<>(got.value().items).size(), got.value().items.toString());
    assertEquals(20, got.value().items.size());
    assertTrue(got.expiresAt().isPresent(), "the update kept the expiry");
  }

  @Test
  void concurrentWritesAndReadsShareSubmitCalls() {
    try (Client c = CLUSTER.get().client("java-handles", b -> b.maxWriteCalls(1).maxReadCalls(1))) {
      HandleStore<Integer> store = c.handleStore("shared", Integer.class).build();
      List<CompletableFuture<String>> mints = new ArrayList<>();
      for (int i = 0; i < 64; i++) {
        mints.add(store.mint(i));
      }
      List<String> ids = mints.stream().map(f -> value(f)).toList();
      List<CompletableFuture<java.util.Optional<Integer>>> gets = new ArrayList<>();
      ids.forEach(id -> gets.add(store.get(id)));
      for (int i = 0; i < ids.size(); i++) {
        assertEquals(i, value(gets.get(i)).orElseThrow(), ids.get(i));
      }
      CallStats w = c.writeStats();
      CallStats r = c.readStats();
      assertEquals(64, w.sent());
      assertEquals(64, r.sent());
      assertTrue(w.calls() < w.sent() && r.calls() < r.sent(), "not coalesced: " + w + " " + r);
    }
  }

  @Test
  void ttlPositiveExpiresZeroIsTheDefaultNegativeNever() {
    HandleStore<Integer> shortLived =
        client.handleStore("ttl", Integer.class).defaultTtl(Duration.ofMillis(400)).build();
    HandleStore<Integer> plain = client.handleStore("ttl-plain", Integer.class).build();
    String own = value(shortLived.mint(1, Duration.ofMillis(300)));
    String byDefault = value(shortLived.mint(2, Ttl.DEFAULT));
    String never = value(shortLived.mint(3, Ttl.NEVER));
    String noDefault = value(plain.mint(4, Ttl.DEFAULT));
    assertTrue(value(shortLived.getVersioned(never)).orElseThrow().expiresAt().isEmpty());
    assertTrue(value(shortLived.getVersioned(byDefault)).orElseThrow().expiresAt().isPresent());
    Cluster.sleep(Duration.ofMillis(1500));
    Map<String, Boolean> live = Map.of(own, false, byDefault, false, never, true);
    live.forEach((id, want) -> assertEquals(want, value(shortLived.get(id)).isPresent(), id));
    assertTrue(value(plain.get(noDefault)).isPresent(), "TTL 0 without a default expired");
    assertEquals(1L, value(shortLived.len()), "len counts expired handles");
  }
}
