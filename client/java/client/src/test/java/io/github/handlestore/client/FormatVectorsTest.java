package io.github.handlestore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.handlestore.client.testkit.Binary;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * The shared format vectors (proto/vectors/formats.json): what the node accepts as a handle id, a
 * name, a state key and a key prefix, held against the client's checks.
 */
class FormatVectorsTest {
  /** A case's input: a string, or parts (strings or {"repeat", "times"}) concatenated. */
  static String expand(JsonNode input) {
    if (input.isTextual()) {
      return input.textValue();
    }
    if (input.isArray()) {
      StringBuilder b = new StringBuilder();
      input.forEach(part -> b.append(expand(part)));
      return b.toString();
    }
    return input.get("repeat").textValue().repeat(input.get("times").intValue());
  }

  @Test
  void everyCaseIsDecidedAsTheNodeDecidesIt() throws IOException {
    JsonNode formats =
        new ObjectMapper().readTree(Binary.repo().resolve("proto/vectors/formats.json").toFile());
    Map<String, Predicate<String>> checks =
        Map.of(
            "handle_ids", s -> Formats.handleIdProblem(s).isEmpty(),
            "names", Formats::isName,
            "keys", s -> Formats.keyProblem(s).isEmpty(),
            "prefixes", s -> Formats.prefixProblem(s).isEmpty());
    List<String> wrong = new ArrayList<>();
    checks.forEach(
        (kind, check) -> {
          JsonNode cases = formats.get(kind);
          assertTrue(cases != null && cases.size() > 0, kind + ": no cases");
          for (JsonNode c : cases) {
            boolean valid = c.get("valid").booleanValue();
            if (check.test(expand(c.get("input"))) != valid) {
              wrong.add(
                  kind
                      + " "
                      + c.get("input")
                      + " ("
                      + c.get("why").textValue()
                      + "): the node says "
                      + valid);
            }
          }
        });
    assertEquals(List.of(), wrong);
  }

  @Test
  void mintedIdsAreWellFormedAndDistinct() {
    String a = Formats.newHandleId("cart");
    String b = Formats.newHandleId("");
    assertTrue(a.startsWith("cart-") && a.length() == 31, a);
    assertEquals(26, b.length(), b);
    assertTrue(Formats.handleIdProblem(a).isEmpty(), a);
    assertTrue(Formats.handleIdProblem(b).isEmpty(), b);
    assertFalse(a.substring(5).equals(b));
  }
}
