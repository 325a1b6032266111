package io.github.handlestore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Request state is sealed over JSON as serde_json writes it (the Go client's
 * canonicaljson_internal_test.go holds the same cases), so that every client seals the same bytes.
 */
class CanonicalJsonTest {
  static String canonical(Object v) {
    return new String(CanonicalJson.of(v, JacksonCodec.DEFAULT_MAPPER), StandardCharsets.UTF_8);
  }

  static String text(String json) {
    return canonical(StateValue.json(json));
  }

  @Test
  void objectsAreSortedByUtf8AndCompact() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("b", 1);
    m.put("a", Map.of("d", 2, "c", 3));
    assertEquals("{\"a\":{\"c\":3,\"d\":2},\"b\":1}", canonical(m));
    assertEquals("{\"Z\":3,\"z\":2,\"é\":1}", text("{\"é\":1,\"z\":2,\"Z\":3}"));
    // U+FF5E sorts before U+1F600 in UTF-8 (and after it in UTF-16).
    assertEquals("{\"～\":1,\"\uD83D\uDE00\":2}", text("{\"\uD83D\uDE00\":2,\"～\":1}"));
    assertEquals("null", canonical(null));
  }

  @Test
  void stringsAreEscapedOnlyWhereJsonRequires() {
    assertEquals(
        "{\"a\":true,\"z\":\"<&>\u2028é\\n\\u0001\\u001f\\\"\\\\\u007f\"}",
        canonical(Map.of("z", "<&>\u2028é\n\u0001\u001f\"\\\u007f", "a", true)));
  }

  @Test
  void numbersAreWhatSerdeJsonWrites() {
    assertEquals(
        "[0.1,1e21,100.0,1.5e-7,123456.789,-2.5,1e16,0.00001,100,-0.0,18446744073709551615,"
            + "1.8446744073709552e19,-9223372036854775808,-9.223372036854776e18,null]",
        text(
            "[0.1,1e21,100.0,1.5e-7,123456.789,-2.5,1e16,0.00001,100,-0.0,18446744073709551615,"
                + "18446744073709551616,-9223372036854775808,-9223372036854775809,1e400]"));
    assertEquals("[0.1,100.0]", canonical(List.of(0.1, 100.0)));
  }

  @Test
  void floatsAreInRyuLayout() {
    Map<Double, String> cases =
        Map.ofEntries(
            Map.entry(0.1, "0.1"),
            Map.entry(1e21, "1e21"),
            Map.entry(100.0, "100.0"),
            Map.entry(1.5e-7, "1.5e-7"),
            Map.entry(1e16, "1e16"),
            Map.entry(1.2345e17, "1.2345e17"),
            Map.entry(0.00001, "0.00001"),
            Map.entry(0.000001, "1e-6"),
            Map.entry(-2.5, "-2.5"),
            Map.entry(123456.789, "123456.789"),
            Map.entry(1e15, "1000000000000000.0"),
            Map.entry(2e23, "2e23"),
            Map.entry(5e-324, "5e-324"),
            Map.entry(Double.MAX_VALUE, "1.7976931348623157e308"),
            Map.entry(1.0 / 3, "0.3333333333333333"));
    cases.forEach((f, want) -> assertEquals(want, CanonicalJson.ryu(f), String.valueOf(f)));
  }

  @Test
  void whatIsNotJsonIsRefused() {
    assertThrows(ValueCodecException.class, () -> canonical(new Object()));
  }
}
