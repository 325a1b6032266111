package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.errors.Reason;
import io.github.handlestore.client.errors.UnauthenticatedException;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.proto.v1.AuthEnableRequest;
import io.github.handlestore.proto.v1.AuthGrpc;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * An auth-enabled cluster over TLS (set up as client/go/cluster_auth_test.go sets one up): the root
 * token reads and writes; no token, a malformed or a forged one is refused at once with reason
 * unauthenticated and changes nothing; a client that does not trust the nodes' CA is refused at
 * once too.
 */
class TlsAuthClusterTest {
  static Cluster cluster;
  static String rootToken;

  @BeforeAll
  static void start() {
    cluster = Cluster.start(3, true);
    try (Client anyone = cluster.client("java-shop", b -> {})) {
      rootToken =
          value(
                  anyone.invoke(
                      AuthGrpc.getAuthEnableMethod(), AuthEnableRequest.getDefaultInstance()))
              .getRootToken();
    }
    assertFalse(rootToken.isEmpty(), "no root token");
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  static Client as(String token) {
    return cluster.client("java-shop", b -> b.token(token).callTimeout(Duration.ofSeconds(20)));
  }

  @Test
  void theRootTokenReadsAndWritesOverTls() {
    try (Client root = as(rootToken)) {
      value(root.stateTool().store("root/k", Map.of("by", "root")));
      assertEquals(
          "root", value(root.stateTool().get("root/k", Map.class)).orElseThrow().get("by"));
      List<String> https = cluster.endpoints().stream().map(e -> "https://" + e).toList();
      try (Client other = cluster.client("java-shop", b -> b.endpoints(https).token(rootToken))) {
        HandleStore<Cart> carts = other.handleStore("cart", Cart.class).build();
        String id = value(carts.mint(Cart.of("a")));
        assertEquals(List.of("a"), value(carts.get(id)).orElseThrow().items);
      }
    }
  }

  @Test
  void aWatchCarriesTheTokenOverTlsAndAWrongOneOrAnUntrustedNodeIsRefusedAtOnce()
      throws IOException {
    try (Client root = as(rootToken);
        BlockingWatch w =
            BlockingWatch.open(root, WatchTarget.prefix("tls/"), WatchOptions.DEFAULT)) {
      value(root.stateTool().store("tls/k", 1));
      assertEquals("tls/k", w.poll(Duration.ofSeconds(10)).orElseThrow().changes().get(0).key());
    }
    try (Client anyone = as("not-a-token")) {
      long start = System.nanoTime();
      UnauthenticatedException e =
          error(UnauthenticatedException.class, anyone.watch(WatchTarget.prefix("tls/")));
      assertEquals(Reason.UNAUTHENTICATED, e.reason().orElseThrow(), e.getMessage());
      assertTrue(System.nanoTime() - start < Duration.ofSeconds(5).toNanos(), "retried");
    }
    Tls wrong = otherCa();
    try (Client c =
        cluster.client(
            "java-shop", b -> b.tls(wrong).token(rootToken).callTimeout(Duration.ofSeconds(20)))) {
      long start = System.nanoTime();
      UnauthenticatedException e =
          error(UnauthenticatedException.class, c.watch(WatchTarget.prefix("tls/")));
      assertTrue(e.getMessage().contains("TLS"), e.getMessage());
      assertTrue(System.nanoTime() - start < Duration.ofSeconds(10).toNanos(), "retried");
    }
  }

  /** A CA the nodes' certificates are not from. */
  static Tls otherCa() throws IOException {
    java.nio.file.Path other = cluster.root().resolve("other-ca");
    if (!java.nio.file.Files.exists(other.resolve("ca.pem"))) {
      cluster.run(
          List.of(
              cluster.bin().toString(),
              "certs",
              "--dir",
              other.toString(),
              "--node",
              "1=localhost,127.0.0.1"));
    }
    return Tls.fromFiles(other.resolve("ca.pem"), null, null);
  }

  @Test
  void aWrongTokenIsRefusedAtOnceWithItsReasonAndWritesNothing() {
    String forged = rootToken.substring(0, rootToken.length() - 4) + "AAAA";
    if (forged.equals(rootToken)) {
      forged = rootToken.substring(0, rootToken.length() - 4) + "BBBB";
    }
    for (String token : List.of("", "not-a-token", "hs1_x_y", forged)) {
      try (Client c = as(token)) {
        List<Function<Client, CompletableFuture<?>>> calls =
            List.of(
                x -> x.stateTool().store("anon/k", 1),
                x -> x.stateTool().retrieve("anon/k"),
                x -> x.handleStore("anon", Integer.class).build().mint(1));
        for (Function<Client, CompletableFuture<?>> call : calls) {
          long start = System.nanoTime();
          UnauthenticatedException e = error(UnauthenticatedException.class, call.apply(c));
          assertEquals(Reason.UNAUTHENTICATED, e.reason().orElseThrow(), e.getMessage());
          long took = System.nanoTime() - start;
          assertTrue(took < Duration.ofSeconds(5).toNanos(), "retried until the deadline: " + took);
        }
      }
    }
    try (Client root = as(rootToken)) {
      assertFalse(value(root.stateTool().exists("anon/k")), "a refused write was applied");
      assertEquals(0L, value(root.handleStore("anon", Integer.class).build().len()));
    }
  }

  @Test
  void aNodeWhoseCertificateIsNotFromTheTrustedCaIsRefusedAtOnce() throws IOException {
    Tls wrong = otherCa();
    try (Client c =
        cluster.client(
            "java-shop", b -> b.tls(wrong).token(rootToken).callTimeout(Duration.ofSeconds(20)))) {
      long start = System.nanoTime();
      UnauthenticatedException e = error(UnauthenticatedException.class, c.stateTool().exists("k"));
      assertTrue(e.getMessage().contains("TLS"), e.getMessage());
      assertTrue(
          System.nanoTime() - start < Duration.ofSeconds(10).toNanos(),
          "retried until the deadline");
    }
  }
}
