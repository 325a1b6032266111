package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.errors.AlreadyExistsException;
import io.github.handlestore.client.errors.NotFoundException;
import io.github.handlestore.client.errors.PreconditionException;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.SharedCluster;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The key ring and the request-state codec on the shared cluster: what one replica seals another
 * opens, a rotation reaches every replica without a restart, a retired key stops opening, and with
 * single use a blob opens once in the whole cluster, whichever client tries.
 */
class RequestStateClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  /** A client of {@code ns} whose endpoints start at the {@code first}-th node. */
  static Client replica(String ns, int first) {
    List<String> endpoints = new ArrayList<>(CLUSTER.get().endpoints());
    Collections.rotate(endpoints, -first);
    return CLUSTER.get().client(ns, b -> b.endpoints(endpoints));
  }

  @Test
  void theKeyRingIsListedCreatedRotatedAndRetired() {
    try (Client c = replica("java-ring", 0)) {
      BlockingKeyRing ring = c.keyRing().blocking();
      assertEquals(List.of(), ring.list());
      error(NotFoundException.class, RequestStateCodec.fromCluster(c, SealMode.SIGNED));
      String first = ring.create();
      error(AlreadyExistsException.class, c.keyRing().create());
      RingKey k = ring.list().get(0);
      assertEquals(first, k.id());
      assertTrue(k.primary());
      assertEquals(0, k.secret().length, "no secret unless asked");
      assertTrue(k.created().isAfter(Instant.now().minusSeconds(600)), k::toString);
      assertEquals(32, ring.list(true).get(0).secret().length);
      assertFalse(ring.list(true).get(0).toString().contains("secret="), "never shown");

      String second = ring.rotate();
      List<RingKey> keys = ring.list();
      assertEquals(List.of(first, second), keys.stream().map(RingKey::id).toList());
      assertEquals(List.of(false, true), keys.stream().map(RingKey::primary).toList());
      error(PreconditionException.class, c.keyRing().retire(second));
      ring.retire(first);
      assertEquals(List.of(second), ring.list().stream().map(RingKey::id).toList());
      error(NotFoundException.class, c.keyRing().retire(first));
    }
  }

  @Test
  void whatOneReplicaSealsAnotherOpens() {
    try (Client a = replica("java-seal", 0);
        Client b = replica("java-seal", 1)) {
      a.keyRing().blocking().create();
      for (SealMode mode : SealMode.values()) {
        BlockingRequestStateCodec sealer = value(RequestStateCodec.fromCluster(a, mode)).blocking();
        BlockingRequestStateCodec opener = value(RequestStateCodec.fromCluster(b, mode)).blocking();
        String blob =
            sealer.seal(Map.of("step", 2), "user-1", SealOptions.DEFAULT.forTool("checkout"));
        assertEquals(
            Optional.of(Map.of("step", 2)), opener.open(blob, "user-1", "checkout", Map.class));
        assertEquals(Optional.empty(), opener.open(blob, "user-2", "checkout"));
        assertEquals(Optional.empty(), opener.open(blob, "user-1", "get_cart"));
        assertEquals(Optional.empty(), opener.open(blob, "user-1", null));
        assertEquals(Optional.empty(), opener.open("v1.garbage", "user-1", "checkout"));
      }
    }
  }

  @Test
  void aRotationReachesEveryReplicaWithoutARestartAndARetiredKeyStopsOpening() {
    try (Client a = replica("java-rotate", 0);
        Client b = replica("java-rotate", 1)) {
      String old = a.keyRing().blocking().create();
      RequestStateCodec sealer = value(RequestStateCodec.fromCluster(a, SealMode.ENCRYPTED));
      RequestStateCodec opener =
          value(RequestStateCodec.fromCluster(b, SealMode.ENCRYPTED, Duration.ofMillis(200)));
      String before = value(sealer.seal("before", "u"));

      a.keyRing().blocking().rotate();
      value(sealer.refresh());
      String after = value(sealer.seal("after", "u"));
      // Sealed under a key the opener has not read yet: it reads the ring again and opens it.
      Cluster.sleep(Duration.ofMillis(300));
      assertEquals(Optional.of("\"after\""), value(opener.open(after, "u", "")));
      assertEquals(Optional.of("\"before\""), value(opener.open(before, "u", "")));

      a.keyRing().blocking().retire(old);
      Cluster.sleep(Duration.ofMillis(300)); // one refresh interval
      assertEquals(Optional.empty(), value(opener.open(before, "u", "")));
      assertEquals(Optional.of("\"after\""), value(opener.open(after, "u", "")));
    }
  }

  @Test
  void aTokenRedeemsOnceAndItsRecordIsTheSharedStoresHandle() {
    try (Client c = replica("java-redeem", 0)) {
      SingleUse once = new SingleUse(c);
      assertEquals(List.of(true, false, false), redeemThrice(once, "token-a"));
      assertTrue(value(once.redeem("token-b", Duration.ZERO)), "token-b is its own");
      HandleStore<Boolean> redeemed = c.handleStore(SingleUse.STORE, Boolean.class).build();
      Versioned<Boolean> v =
          value(redeemed.getVersioned(SingleUse.redeemedId("token-b"))).orElseThrow();
      assertTrue(v.value());
      long left = v.expiresAtMillis() - System.currentTimeMillis();
      assertTrue(left > 0 && left <= 2000, "kept about a second (ttl 0 is 1 s): " + left);
    }
  }

  private static List<Boolean> redeemThrice(SingleUse once, String token) {
    List<Boolean> out = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      out.add(value(once.redeem(token, Duration.ofMinutes(1))));
    }
    return out;
  }

  @Test
  void withSingleUseABlobOpensOnceInTheWholeClusterWhicheverClientTries() {
    List<Client> clients = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        clients.add(replica("java-single-use", i));
      }
      clients.get(0).keyRing().blocking().create();
      List<RequestStateCodec> replicas = new ArrayList<>();
      for (Client c : clients) {
        replicas.add(
            value(RequestStateCodec.fromCluster(c, SealMode.ENCRYPTED))
                .withSingleUse(new SingleUse(c)));
      }
      SealOptions opts = SealOptions.DEFAULT.forTool("checkout").withTtl(Duration.ofMinutes(1));
      String blob = value(replicas.get(0).seal(Map.of("step", 2), "user-1", opts));

      // Every replica at once: exactly one opens it.
      List<CompletableFuture<Optional<String>>> tries =
          replicas.stream().map(r -> r.open(blob, "user-1", "checkout")).toList();
      List<String> opened = tries.stream().map(f -> value(f)).flatMap(Optional::stream).toList();
      assertEquals(List.of("{\"step\":2}"), opened, "exactly one replica opens it");
      for (RequestStateCodec r : replicas) {
        assertEquals(Optional.empty(), value(r.open(blob, "user-1", "checkout")), "again");
      }

      // A blob that does not open is not redeemed: its rightful opening still works, once.
      String other = value(replicas.get(1).seal(Map.of("step", 3), "user-1", opts));
      assertEquals(Optional.empty(), value(replicas.get(2).open(other, "user-2", "checkout")));
      assertEquals(
          Optional.of("{\"step\":3}"), value(replicas.get(2).open(other, "user-1", "checkout")));
      assertEquals(Optional.empty(), value(replicas.get(0).open(other, "user-1", "checkout")));

      // The record lives about as long as the blob (60 s, and one more).
      HandleStore<Boolean> redeemed =
          clients.get(0).handleStore(SingleUse.STORE, Boolean.class).build();
      long left =
          value(redeemed.getVersioned(SingleUse.redeemedId(blob))).orElseThrow().expiresAtMillis()
              - System.currentTimeMillis();
      assertTrue(left > 50_000 && left <= 62_000, "kept " + left + " ms");
    } finally {
      clients.forEach(Client::close);
    }
  }

  @Test
  void singleUseFailsClosedWhenItsRedemptionCannotBeRecorded() {
    try (Client c = replica("java-single-closed", 0);
        Client dead =
            new Client(
                ClientConfig.builder()
                    .endpoints(List.of("127.0.0.1:1"))
                    .namespace("java-single-closed")
                    .callTimeout(Duration.ofMillis(300))
                    .build())) {
      c.keyRing().blocking().create();
      RequestStateCodec codec = value(RequestStateCodec.fromCluster(c, SealMode.SIGNED));
      String blob = value(codec.seal(Map.of("step", 1), "user-1"));
      assertEquals(
          Optional.empty(),
          value(codec.withSingleUse(new SingleUse(dead)).open(blob, "user-1", "")),
          "opened without a recorded redemption");
      // Nothing was recorded: with the cluster it opens, once.
      RequestStateCodec once = codec.withSingleUse(new SingleUse(c));
      assertEquals(Optional.of("{\"step\":1}"), value(once.open(blob, "user-1", "")));
      assertEquals(Optional.empty(), value(once.open(blob, "user-1", "")));
      assertTrue(value(codec.open(blob, "user-1", "")).isPresent(), "without single use");
    }
  }
}
