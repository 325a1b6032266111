package io.github.handlestore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.handlestore.client.errors.InvalidArgumentException;
import io.github.handlestore.client.testkit.Binary;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The shared request-state vectors (proto/vectors/request_state_vectors.json), which every client
 * passes: each blob opens, or is refused, as it says (valid, tampered, wrong subject or tool,
 * expired, an older key still in the ring, a retired key, malformed); the ones marked "encodes" are
 * sealed here byte for byte; and a token is redeemed under the id the vectors give.
 */
class RequestStateVectorsTest {
  static final ObjectMapper JSON = new ObjectMapper();

  static JsonNode vectors() throws IOException {
    return JSON.readTree(
        Binary.repo().resolve("proto/vectors/request_state_vectors.json").toFile());
  }

  static RequestStateCodec codec(JsonNode all, JsonNode v) {
    List<RingKey> ring = new ArrayList<>();
    for (JsonNode id : v.get("ring")) {
      String name = id.textValue();
      ring.add(
          RingKey.of(
              name,
              name.equals(all.get("primary").textValue()),
              all.get("keys").get(name).textValue()));
    }
    return RequestStateCodec.of(
        ring, v.get("mode").textValue().equals("encrypted") ? SealMode.ENCRYPTED : SealMode.SIGNED);
  }

  static String toolOf(JsonNode v) {
    return v.get("tool").isNull() ? "" : v.get("tool").textValue();
  }

  @TestFactory
  Stream<DynamicTest> everyVectorOpensAsItSaysAndSealsByteForByte() throws IOException {
    JsonNode all = vectors();
    assertTrue(all.get("vectors").size() > 0, "no vectors");
    List<DynamicTest> tests = new ArrayList<>();
    for (JsonNode v : all.get("vectors")) {
      String name = v.get("name").textValue();
      tests.add(DynamicTest.dynamicTest("opens: " + name, () -> opens(all, v)));
      if (v.path("encodes").asBoolean(false)) {
        tests.add(DynamicTest.dynamicTest("seals: " + name, () -> seals(all, v)));
      }
    }
    return tests.stream();
  }

  private static void opens(JsonNode all, JsonNode v) throws IOException {
    Optional<String> got =
        codec(all, v)
            .openAt(
                v.get("blob").textValue(),
                v.get("subject").textValue(),
                toolOf(v),
                v.get("now").longValue());
    if (v.get("expect").isNull()) {
      assertTrue(got.isEmpty(), () -> "opened " + got.get() + "; want refused");
      return;
    }
    assertTrue(got.isPresent(), "refused; want " + v.get("expect"));
    assertEquals(v.get("expect"), JSON.readTree(got.get()));
  }

  private static void seals(JsonNode all, JsonNode v) {
    byte[] nonce = HexFormat.of().parseHex(all.get("nonce").textValue());
    String blob =
        codec(all, v)
            .sealAt(
                v.get("expect"),
                v.get("subject").textValue(),
                toolOf(v),
                all.get("exp").longValue(),
                nonce);
    assertEquals(v.get("blob").textValue(), blob);
  }

  @Test
  void aTokenIsRedeemedUnderTheIdTheVectorsGive() throws IOException {
    JsonNode redemptions = vectors().get("redemptions");
    assertTrue(redemptions.size() > 0, "no redemptions in the vectors");
    for (JsonNode r : redemptions) {
      String id = SingleUse.redeemedId(r.get("token").textValue());
      assertEquals(r.get("id").textValue(), id, r.get("token").textValue());
      assertTrue(Formats.handleIdProblem(id).isEmpty(), id);
    }
    assertNotEquals(SingleUse.redeemedId("v1.payload.tag"), SingleUse.redeemedId("v1.payload.tah"));
  }

  @Test
  void aKeyWithoutItsSecretIsRefused() {
    assertThrows(
        InvalidArgumentException.class,
        () -> RequestStateCodec.of(List.of(RingKey.of("k1", true, "00")), SealMode.SIGNED));
  }

  @Test
  void whatOneModeSealsTheOtherOpensAndStateRoundTrips() throws IOException {
    JsonNode all = vectors();
    RingKey key = RingKey.of("key1", true, all.get("keys").get("key1").textValue());
    for (SealMode mode : SealMode.values()) {
      RequestStateCodec c = RequestStateCodec.of(List.of(key), mode);
      String blob =
          c.sealAt(java.util.Map.of("a", List.of(1, "é")), "s", "t", 2_000_000_000L, null);
      assertEquals(
          "{\"a\":[1,\"é\"]}", c.openAt(blob, "s", "t", 1_999_999_999L).orElseThrow(), mode.name());
      assertFalse(c.openAt(blob, "s", "t", 2_000_000_000L).isPresent(), "expired at exp");
      assertFalse(c.openAt(blob + "A", "s", "t", 0).isPresent(), "not strict base64url");
    }
  }
}
