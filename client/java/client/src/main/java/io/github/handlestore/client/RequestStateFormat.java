package io.github.handlestore.client;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectReader;
import io.github.handlestore.client.errors.ErrorDetails;
import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.client.errors.Reason;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The sealed request-state format every client shares (the Rust crate's
 * client/rust/src/request_state.rs; the Go client's requeststate.go and requestopen.go), held to
 * proto/vectors/request_state_vectors.json:
 *
 * <ul>
 *   <li>signed: {@code "v1." b64(payload) "." b64(HMAC-SHA256(macKey, payload))}
 *   <li>encrypted: {@code "v1e." b64(nonce[12] ‖ ciphertext ‖ tag[16])}, AES-256-GCM with the bind
 *       tag (hex) as associated data
 * </ul>
 *
 * b64 is base64url without padding. The payload is {@code {"s":<state>,"exp":<unix
 * seconds>,"b":<bind tag hex>}} with the state in {@link CanonicalJson}'s form; the bind tag is
 * HMAC-SHA256(macKey, subject), or of subject ‖ 0x00 ‖ tool. Each ring key gives a macKey and an
 * aesKey by HKDF-SHA256 (no salt; info {@code handlestore/request-state/v1/mac} and {@code
 * .../aes}). Opening fails closed: anything but a well-formed, authentic, unexpired blob for this
 * subject and tool is empty, never an error; every key is tried (blobs carry no key id).
 */
final class RequestStateFormat {
  static final String SIGNED = "v1.";
  static final String ENCRYPTED = "v1e.";
  static final int NONCE_LEN = 12;
  static final int TAG_LEN = 16;

  /** The longest blob opening looks at. */
  static final int MAX_BLOB_LEN = 64 << 10;

  private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
  private static final Base64.Decoder UNB64 = Base64.getUrlDecoder();
  private static final HexFormat HEX = HexFormat.of();
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final ObjectReader JSON =
      JacksonCodec.DEFAULT_MAPPER
          .reader()
          .with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .forType(JsonNode.class);

  private RequestStateFormat() {}

  /** A ring key's derived keys. */
  record Key(boolean primary, byte[] mac, byte[] aes) {}

  /** What opened: the state (canonical JSON) and its expiry (unix seconds, unsigned). */
  record Opened(String state, long exp) {}

  /** The derived keys of a ring; a key without a 32-byte secret is refused. */
  static List<Key> derive(List<RingKey> ring) {
    return ring.stream().map(RequestStateFormat::derive).toList();
  }

  private static Key derive(RingKey k) {
    byte[] secret = k.secret();
    if (secret.length < 32) {
      throw HandlestoreException.invalid(
          "key " + k.id() + " has no 32-byte secret (list the ring with its secrets)");
    }
    return new Key(
        k.primary(),
        hkdf(secret, "handlestore/request-state/v1/mac"),
        hkdf(secret, "handlestore/request-state/v1/aes"));
  }

  /** HKDF-SHA256 (RFC 5869) without salt, 32 bytes: one expand block. */
  private static byte[] hkdf(byte[] secret, String info) {
    byte[] prk = hmac(new byte[32], secret);
    byte[] in = info.getBytes(StandardCharsets.UTF_8);
    byte[] block = new byte[in.length + 1];
    System.arraycopy(in, 0, block, 0, in.length);
    block[in.length] = 1;
    return hmac(prk, block);
  }

  static byte[] hmac(byte[] key, byte[]... parts) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      for (byte[] p : parts) {
        mac.update(p);
      }
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HMAC-SHA256 is missing from this JVM", e);
    }
  }

  private static String bindTag(Key k, String subject, String tool) {
    byte[] s = subject.getBytes(StandardCharsets.UTF_8);
    byte[] tag =
        tool.isEmpty()
            ? hmac(k.mac(), s)
            : hmac(k.mac(), s, new byte[] {0}, tool.getBytes(StandardCharsets.UTF_8));
    return HEX.formatHex(tag);
  }

  /**
   * Seals {@code state} (canonical JSON, UTF-8) for {@code subject} and {@code tool} ("" for none)
   * with the primary key, valid until {@code exp}; {@code nonce} null draws one.
   */
  static String seal(
      List<Key> keys,
      SealMode mode,
      byte[] state,
      String subject,
      String tool,
      long exp,
      byte[] nonce) {
    Key key =
        keys.stream()
            .filter(Key::primary)
            .findFirst()
            .orElseThrow(
                () ->
                    HandlestoreException.of(
                        Status.Code.NOT_FOUND,
                        "the key ring has no primary key",
                        ErrorDetails.of(Reason.NOT_FOUND)));
    String bind = bindTag(key, subject, tool);
    byte[] body = payload(state, exp, bind);
    if (mode == SealMode.SIGNED) {
      return SIGNED + B64.encodeToString(body) + "." + B64.encodeToString(hmac(key.mac(), body));
    }
    if (nonce == null) {
      nonce = new byte[NONCE_LEN];
      RANDOM.nextBytes(nonce);
    }
    if (nonce.length != NONCE_LEN) {
      throw new IllegalArgumentException("a nonce is " + NONCE_LEN + " bytes");
    }
    byte[] sealed = gcm(Cipher.ENCRYPT_MODE, key, nonce, bind, body, 0, body.length);
    byte[] out = new byte[NONCE_LEN + sealed.length];
    System.arraycopy(nonce, 0, out, 0, NONCE_LEN);
    System.arraycopy(sealed, 0, out, NONCE_LEN, sealed.length);
    return ENCRYPTED + B64.encodeToString(out);
  }

  private static byte[] payload(byte[] state, long exp, String bind) {
    String head = "{\"s\":";
    String tail = ",\"exp\":" + Long.toUnsignedString(exp) + ",\"b\":\"" + bind + "\"}";
    byte[] h = head.getBytes(StandardCharsets.UTF_8);
    byte[] t = tail.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[h.length + state.length + t.length];
    System.arraycopy(h, 0, out, 0, h.length);
    System.arraycopy(state, 0, out, h.length, state.length);
    System.arraycopy(t, 0, out, h.length + state.length, t.length);
    return out;
  }

  private static byte[] gcm(
      int mode, Key key, byte[] nonce, String bind, byte[] in, int offset, int len) {
    try {
      Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
      c.init(mode, new SecretKeySpec(key.aes(), "AES"), new GCMParameterSpec(TAG_LEN * 8, nonce));
      c.updateAAD(bind.getBytes(StandardCharsets.US_ASCII));
      return c.doFinal(in, offset, len);
    } catch (javax.crypto.AEADBadTagException e) {
      return null;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES-256-GCM is missing from this JVM", e);
    }
  }

  /** Opens {@code blob} at {@code now} (unix seconds): empty unless it is all it should be. */
  static Optional<Opened> open(List<Key> keys, String blob, String subject, String tool, long now) {
    if (blob == null || blob.length() > MAX_BLOB_LEN) {
      return Optional.empty();
    }
    if (blob.startsWith(ENCRYPTED)) {
      return openEncrypted(keys, blob.substring(ENCRYPTED.length()), subject, tool, now);
    }
    if (blob.startsWith(SIGNED)) {
      return openSigned(keys, blob.substring(SIGNED.length()), subject, tool, now);
    }
    return Optional.empty();
  }

  private static Optional<Opened> openSigned(
      List<Key> keys, String rest, String subject, String tool, long now) {
    int dot = rest.indexOf('.');
    if (dot < 0) {
      return Optional.empty();
    }
    byte[] body = unb64(rest.substring(0, dot));
    byte[] tag = unb64(rest.substring(dot + 1));
    if (body == null || tag == null) {
      return Optional.empty();
    }
    for (Key k : keys) {
      if (MessageDigest.isEqual(hmac(k.mac(), body), tag)) {
        Optional<Opened> o = accept(k, body, subject, tool, now);
        if (o.isPresent()) {
          return o;
        }
      }
    }
    return Optional.empty();
  }

  private static Optional<Opened> openEncrypted(
      List<Key> keys, String rest, String subject, String tool, long now) {
    byte[] raw = unb64(rest);
    if (raw == null || raw.length < NONCE_LEN + TAG_LEN) {
      return Optional.empty();
    }
    byte[] nonce = Arrays.copyOf(raw, NONCE_LEN);
    for (Key k : keys) {
      String bind = bindTag(k, subject, tool);
      byte[] body =
          gcm(Cipher.DECRYPT_MODE, k, nonce, bind, raw, NONCE_LEN, raw.length - NONCE_LEN);
      if (body != null) {
        Optional<Opened> o = accept(k, body, subject, tool, now);
        if (o.isPresent()) {
          return o;
        }
      }
    }
    return Optional.empty();
  }

  /**
   * Base64url without padding, strictly (as Go's RawURLEncoding.Strict): what does not encode back
   * to the same text (padding, stray bits) is refused; null if it is not base64url.
   */
  private static byte[] unb64(String s) {
    try {
      byte[] b = UNB64.decode(s);
      return B64.encodeToString(b).equals(s) ? b : null;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** Checks an authentic payload against the binding and the clock. */
  private static Optional<Opened> accept(
      Key k, byte[] body, String subject, String tool, long now) {
    JsonNode p;
    try {
      p = JSON.readValue(body);
    } catch (IOException e) {
      return Optional.empty();
    }
    if (p == null || !p.isObject() || !p.has("s")) {
      return Optional.empty();
    }
    JsonNode exp = p.get("exp");
    JsonNode bind = p.get("b");
    if (exp == null || !exp.isIntegralNumber() || exp.bigIntegerValue().signum() < 0) {
      return Optional.empty();
    }
    if (exp.bigIntegerValue().bitLength() > 64 || bind == null || !bind.isTextual()) {
      return Optional.empty();
    }
    String b = bind.textValue();
    long e = exp.bigIntegerValue().longValue();
    boolean bound =
        b.equals(b.toLowerCase(Locale.ROOT))
            && MessageDigest.isEqual(
                b.getBytes(StandardCharsets.US_ASCII),
                bindTag(k, subject, tool).getBytes(StandardCharsets.US_ASCII));
    if (!bound || Long.compareUnsigned(now, e) >= 0) {
      return Optional.empty();
    }
    return Optional.of(new Opened(CanonicalJson.write(p.get("s")), e));
  }
}
