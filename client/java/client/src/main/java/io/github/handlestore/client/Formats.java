package io.github.handlestore.client;

import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.client.errors.InvalidArgumentException;
import java.security.SecureRandom;
import java.util.Optional;

/**
 * Handle ids, names and state keys, checked as the node checks them (proto/src/id.rs,
 * proto/src/key.rs; held to proto/vectors/formats.json), so that malformed input is refused before
 * any call. A handle id is {@code <prefix>-<26 chars>} or the 26 characters alone: 128 CSPRNG bits
 * in RFC 4648 base32 (A-Z, 2-7), no padding, as mcpkit's HandleStore mints them.
 */
public final class Formats {
  /** The length of an id's random part. */
  static final int ID_LEN = 26;

  /** The most bytes of an id prefix, namespace or store name. */
  static final int MAX_NAME_LEN = 64;

  /** The most bytes of a state key or prefix (UTF-8). */
  static final int MAX_KEY_LEN = 1024;

  private static final String BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  private static final SecureRandom RANDOM = new SecureRandom();

  private Formats() {}

  /** A fresh handle id; with a prefix ("" for none), {@code <prefix>-<id>}. */
  public static String newHandleId(String prefix) {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    return (prefix.isEmpty() ? "" : prefix + "-") + idOf(b);
  }

  /** The 26-character id part of 16 bytes: RFC 4648 base32, upper case, no padding. */
  static String idOf(byte[] b) {
    StringBuilder id = new StringBuilder(ID_LEN);
    int buffer = 0;
    int bits = 0;
    for (byte x : b) {
      buffer = (buffer << 8) | (x & 0xff);
      bits += 8;
      while (bits >= 5) {
        id.append(BASE32.charAt((buffer >> (bits - 5)) & 31));
        bits -= 5;
      }
    }
    // 128 bits: 25 whole characters and 3 bits left, padded with two zero bits.
    id.append(BASE32.charAt((buffer << (5 - bits)) & 31));
    return id.toString();
  }

  /**
   * A namespace, store name or id prefix: A-Z a-z 0-9 _ - . only, 1 to 64 bytes.
   *
   * @return whether {@code s} is one
   */
  public static boolean isName(String s) {
    return isName(s, MAX_NAME_LEN);
  }

  static boolean isName(String s, int maxLen) {
    if (s == null || s.isEmpty() || s.length() > maxLen) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean ok =
          c >= 'A' && c <= 'Z'
              || c >= 'a' && c <= 'z'
              || c >= '0' && c <= '9'
              || c == '_'
              || c == '-'
              || c == '.';
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  /** Why {@code id} is not a well-formed handle id; empty if it is one. */
  public static Optional<InvalidArgumentException> handleIdProblem(String id) {
    if (id == null || id.isEmpty()) {
      return bad("handle id must not be empty");
    }
    if (utf8Length(id) > MAX_NAME_LEN + 1 + ID_LEN) {
      return bad("handle id " + shown(id) + "... is too long");
    }
    String random = id;
    if (id.length() > ID_LEN && id.charAt(id.length() - ID_LEN - 1) == '-') {
      String prefix = id.substring(0, id.length() - ID_LEN - 1);
      random = id.substring(id.length() - ID_LEN);
      if (!isName(prefix)) {
        return bad("handle id " + shown(id) + " has an invalid prefix (A-Z a-z 0-9 _ - . only)");
      }
    }
    if (!isRandomPart(random)) {
      return bad(
          "handle id "
              + shown(id)
              + " is malformed: expected 26 base32 characters (A-Z, 2-7),"
              + " optionally after \"<prefix>-\"");
    }
    return Optional.empty();
  }

  /** 26 base32 characters carrying 128 bits (the last one's two low bits are zero). */
  private static boolean isRandomPart(String s) {
    if (s.length() != ID_LEN) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      if (BASE32.indexOf(s.charAt(i)) < 0) {
        return false;
      }
    }
    return (BASE32.indexOf(s.charAt(ID_LEN - 1)) & 3) == 0;
  }

  /**
   * Why {@code key} is not a well-formed state key (non-empty, UTF-8 of at most 1024 bytes, no
   * control characters, no empty segment); empty if it is one.
   */
  public static Optional<InvalidArgumentException> keyProblem(String key) {
    if (key == null || key.isEmpty()) {
      return bad("key must not be empty");
    }
    Optional<InvalidArgumentException> common = commonProblem("key", key);
    if (common.isPresent()) {
      return common;
    }
    for (String segment : key.split("/", -1)) {
      if (segment.isEmpty()) {
        return bad(
            "key " + shown(key) + " has an empty segment (no leading, trailing or doubled '/')");
      }
    }
    return Optional.empty();
  }

  /** Why {@code prefix} is not a well-formed key prefix ("" is every key); empty if it is one. */
  public static Optional<InvalidArgumentException> prefixProblem(String prefix) {
    if (prefix == null) {
      return bad("prefix must not be null");
    }
    return commonProblem("prefix", prefix);
  }

  private static Optional<InvalidArgumentException> commonProblem(String what, String s) {
    int bytes = utf8Length(s);
    if (bytes < 0) {
      return bad(what + " " + shown(s) + " is not UTF-8 (a lone surrogate)");
    }
    if (bytes > MAX_KEY_LEN) {
      return bad(what + " is " + bytes + " bytes; the limit is " + MAX_KEY_LEN);
    }
    if (s.codePoints().anyMatch(cp -> Character.getType(cp) == Character.CONTROL)) {
      return bad(what + " " + shown(s) + " contains a control character");
    }
    return Optional.empty();
  }

  /** The UTF-8 length of {@code s}, or -1 if it holds a lone surrogate (no UTF-8 form). */
  static int utf8Length(String s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c)
          && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else if (Character.isSurrogate(c)) {
        return -1;
      } else {
        n += 3;
      }
    }
    return n;
  }

  /** {@code s} for an error message: quoted, at most 80 characters. */
  static String shown(String s) {
    String cut =
        s.codePointCount(0, s.length()) > 80 ? s.substring(0, s.offsetByCodePoints(0, 80)) : s;
    StringBuilder b = new StringBuilder("\"");
    cut.codePoints()
        .forEach(
            cp -> {
              if (cp == '"' || cp == '\\') {
                b.append('\\').appendCodePoint(cp);
              } else if (Character.getType(cp) == Character.CONTROL || cp > 0x7e) {
                b.append(cp > 0xffff ? String.format("\\U%08x", cp) : String.format("\\u%04x", cp));
              } else {
                b.appendCodePoint(cp);
              }
            });
    return b.append('"').toString();
  }

  private static Optional<InvalidArgumentException> bad(String message) {
    return Optional.of(HandlestoreException.invalid(message));
  }

  /** Throws what {@link #handleIdProblem} finds. */
  static void checkHandleId(String id) {
    handleIdProblem(id)
        .ifPresent(
            e -> {
              throw e;
            });
  }

  /** Throws what {@link #keyProblem} finds. */
  static void checkKey(String key) {
    keyProblem(key)
        .ifPresent(
            e -> {
              throw e;
            });
  }

  /** Throws what {@link #prefixProblem} finds. */
  static void checkPrefix(String prefix) {
    prefixProblem(prefix)
        .ifPresent(
            e -> {
              throw e;
            });
  }

  /** Throws unless {@code name} is a store name. */
  static void checkStore(String name) {
    if (!isName(name)) {
      throw HandlestoreException.invalid(
          "store name "
              + shown(String.valueOf(name))
              + " may only contain A-Z a-z 0-9 _ - . (1-64 bytes)");
    }
  }

  /** Throws unless {@code ns} is a namespace name. */
  static void checkNamespace(String ns) {
    if (!isName(ns)) {
      throw HandlestoreException.invalid(
          "namespace "
              + shown(String.valueOf(ns))
              + " may only contain A-Z a-z 0-9 _ - . (1-64 bytes)");
    }
  }
}
