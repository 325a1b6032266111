package io.github.handlestore.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * A JSON value as Rust's serde_json writes it, so that request state sealed here is byte for byte
 * what the other clients seal (the Go client's canonicaljson.go, the shared vectors): compact,
 * object keys sorted by their UTF-8 bytes, strings escaped only where JSON requires (U+2028, {@code
 * <}, {@code >} and {@code &} as they are), an integer that fits 64 bits as it is, any other number
 * as an f64 in ryu's shortest layout (1e21, 0.1, 100.0).
 */
final class CanonicalJson {
  private static final BigInteger MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

  private CanonicalJson() {}

  /**
   * {@code value} (any object {@code mapper} writes as JSON; a JSON {@link StateValue} as its text)
   * in canonical form, as UTF-8.
   *
   * @throws ValueCodecException if it is not JSON
   */
  static byte[] of(Object value, ObjectMapper mapper) {
    try {
      String text =
          value instanceof StateValue v && v.isJson()
              ? v.jsonText()
              : mapper.writeValueAsString(value);
      return write(mapper.readTree(text)).getBytes(StandardCharsets.UTF_8);
    } catch (JsonProcessingException e) {
      throw new ValueCodecException("the value is not JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** {@code node} in canonical form. */
  static String write(JsonNode node) {
    StringBuilder b = new StringBuilder();
    write(b, node);
    return b.toString();
  }

  private static void write(StringBuilder b, JsonNode v) {
    if (v.isObject()) {
      List<String> keys = new ArrayList<>();
      v.fieldNames().forEachRemaining(keys::add);
      keys.sort(CanonicalJson::byUtf8);
      b.append('{');
      for (int i = 0; i < keys.size(); i++) {
        b.append(i > 0 ? "," : "");
        string(b, keys.get(i));
        b.append(':');
        write(b, v.get(keys.get(i)));
      }
      b.append('}');
    } else if (v.isArray()) {
      b.append('[');
      for (Iterator<JsonNode> it = v.elements(); it.hasNext(); ) {
        write(b, it.next());
        b.append(it.hasNext() ? "," : "");
      }
      b.append(']');
    } else if (v.isTextual()) {
      string(b, v.textValue());
    } else if (v.isNumber()) {
      b.append(number(v));
    } else if (v.isBoolean()) {
      b.append(v.booleanValue());
    } else {
      b.append("null");
    }
  }

  /** UTF-8 byte order is code point order (String's own order is UTF-16's). */
  private static int byUtf8(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int x = a.codePointAt(i);
      int y = b.codePointAt(j);
      if (x != y) {
        return Integer.compare(x, y);
      }
      i += Character.charCount(x);
      j += Character.charCount(y);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }

  /** Escapes as serde_json: quote, backslash and the control characters below 0x20 only. */
  private static void string(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\b' -> b.append("\\b");
        case '\f' -> b.append("\\f");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    b.append('"');
  }

  /** An integer that fits 64 bits (signed or unsigned) as it is; any other number as an f64. */
  private static String number(JsonNode n) {
    if (n.isIntegralNumber()) {
      BigInteger i = n.bigIntegerValue();
      if (i.compareTo(MIN) >= 0 && i.compareTo(MAX) <= 0) {
        return i.toString();
      }
    }
    double f = n.doubleValue();
    return Double.isFinite(f) ? ryu(f) : "null";
  }

  /**
   * {@code f}'s shortest digits that read back as {@code f} (the closest such, as ryu picks them),
   * in ryu's layout: plain decimals for exponents -5..16 (with ".0" on whole numbers), else
   * d.ddde±x without a plus sign.
   */
  static String ryu(double f) {
    String sign = f < 0 || (f == 0 && 1 / f < 0) ? "-" : "";
    f = Math.abs(f);
    if (f == 0) {
      return sign + "0.0";
    }
    BigDecimal d = shortest(f).stripTrailingZeros();
    String digits = d.unscaledValue().toString();
    int n = digits.length();
    int kk = n - d.scale(); // where the decimal point goes, counted from the first digit
    if (n <= kk && kk <= 16) {
      return sign + digits + "0".repeat(kk - n) + ".0";
    }
    if (0 < kk && kk <= 16) {
      return sign + digits.substring(0, kk) + "." + digits.substring(kk);
    }
    if (-5 < kk && kk <= 0) {
      return sign + "0." + "0".repeat(-kk) + digits;
    }
    String mantissa = n == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
    return sign + mantissa + "e" + (kk - 1);
  }

  /**
   * The decimal of fewest digits that reads back as {@code f} (positive, finite); of two such, the
   * nearer to {@code f}, and of two as near, the one ending in an even digit. Any p-digit decimal
   * that reads back as {@code f} is one of the two p-digit neighbours of {@code f}.
   */
  private static BigDecimal shortest(double f) {
    BigDecimal exact = new BigDecimal(f);
    for (int p = 1; ; p++) {
      BigDecimal lo = exact.round(new MathContext(p, RoundingMode.FLOOR));
      BigDecimal hi = exact.round(new MathContext(p, RoundingMode.CEILING));
      boolean loOk = lo.doubleValue() == f;
      boolean hiOk = hi.doubleValue() == f;
      if (loOk && hiOk) {
        int c = exact.subtract(lo).compareTo(hi.subtract(exact));
        boolean loEven = !lo.unscaledValue().testBit(0);
        return c < 0 || (c == 0 && loEven) ? lo : hi;
      }
      if (loOk || hiOk) {
        return loOk ? lo : hi;
      }
    }
  }
}
