package io.github.handlestore.examples.cart;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The command line, as the TypeScript twin reads it; what is wrong with a bad one. */
class CartOptionsTest {
  @Test
  void defaults() {
    CartOptions o = CartOptions.parse();
    assertEquals("127.0.0.1", o.host());
    assertEquals(8084, o.port());
    assertEquals("handlestore", o.kv());
    assertEquals(Duration.ofHours(1), o.cartTtl());
  }

  @Test
  void flagsWithSpacesOrEquals() {
    CartOptions o =
        CartOptions.parse(
            "--listen=0.0.0.0:0",
            "--kv",
            "redis",
            "--redis",
            "redis://127.0.0.1:6379/",
            "--endpoints",
            "a:1,b:2",
            "--namespace=ns",
            "--cart-ttl",
            "90s");
    assertEquals("0.0.0.0", o.host());
    assertEquals(0, o.port());
    assertEquals("redis://127.0.0.1:6379/", o.redis());
    assertEquals("a:1,b:2", o.endpoints());
    assertEquals("ns", o.namespace());
    assertEquals(Duration.ofSeconds(90), o.cartTtl());
    assertEquals("::1", CartOptions.parse("--listen", "[::1]:80").host());
    assertEquals("127.0.0.1", CartOptions.parse("--listen", ":80").host());
  }

  @Test
  void durationsAsTheTwinsWriteThem() {
    assertEquals(Duration.ofMillis(500), CartOptions.duration("500ms"));
    assertEquals(Duration.ofMinutes(30), CartOptions.duration("30m"));
    assertEquals(Duration.ofHours(2), CartOptions.duration("2h"));
    assertEquals(Duration.ofMillis(2500), CartOptions.duration("2.5"));
    assertEquals(Duration.ZERO, CartOptions.duration("0"));
  }

  @Test
  void aBadCommandLineSaysWhatIsWrong() {
    assertRefused("unknown flag --port", "--port", "1");
    assertRefused("--kv is handlestore, redis or memory, not \"etcd\"", "--kv", "etcd");
    assertRefused("--kv redis needs --redis URL", "--kv", "redis");
    assertRefused("--listen is HOST:PORT, not \"8080\"", "--listen", "8080");
    assertRefused("--listen port \"http\" is not 0 to 65535", "--listen", "a:http");
    assertRefused("--listen port \"70000\" is not 0 to 65535", "--listen", "a:70000");
    assertRefused("--cart-ttl: not a duration: \"1d\"", "--cart-ttl", "1d");
    assertRefused("--cart-ttl: not a duration: \"-1s\"", "--cart-ttl", "-1s");
    assertRefused("--endpoints needs a value", "--endpoints");
    assertRefused("unexpected argument \"serve\"", "serve");
  }

  @Test
  void modernRequestsAndHandshakeEraOnesGoToTheirServers() {
    assertTrue(ProtocolRouter.isLegacy(null), "initialize carries no version");
    assertTrue(ProtocolRouter.isLegacy("2025-11-25"));
    assertTrue(ProtocolRouter.isLegacy("2025-03-26"));
    assertFalse(ProtocolRouter.isLegacy("2026-07-28"));
    assertFalse(ProtocolRouter.isLegacy("2027-01-01"), "the modern server refuses it, listing");
  }

  private static void assertRefused(String why, String... argv) {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> CartOptions.parse(argv));
    assertEquals(why, e.getMessage());
  }
}
