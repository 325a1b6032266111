package io.github.handlestore.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.handlestore.client.Change;
import io.github.handlestore.client.ChangeKind;
import io.modelcontextprotocol.modern.server.feature.ServerChange;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;

/**
 * Where a change travels through the cluster: the layout the Rust {@code ResourceBus}, the Python
 * {@code ClusterSubscriptionBus} and the TypeScript {@code ClusterNotificationBus} write, so
 * replicas in every language hear each other. State keys in the client's namespace: {@code
 * mcp/resources/<digest of the URI>} = {@code {"uri": ...}} for a resource update, {@code
 * mcp/lists/<tools|prompts|resources>} = {@code {"changed": ...}} for a list change; the digest is
 * base32 (RFC 4648, upper case, no padding) of the first 16 bytes of the URI's SHA-256
 * (proto/vectors/mcp_events.json's "digests").
 */
final class ChangeLayout {
  static final String RESOURCES_PREFIX = "mcp/resources/";
  static final String LISTS_PREFIX = "mcp/lists/";

  private static final char[] BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".toCharArray();

  /** A change as one state key and its JSON value. */
  record Entry(String key, Map<String, String> value) {}

  private ChangeLayout() {}

  /**
   * The entry a change is written as.
   *
   * @throws IllegalArgumentException for a change other than the SDK's four (no other replica could
   *     tell what it means)
   */
  static Entry entryOf(ServerChange change) {
    if (change instanceof ServerChange.ResourceUpdated r) {
      return new Entry(RESOURCES_PREFIX + digestName(r.uri()), Map.of("uri", r.uri()));
    }
    String list = listOf(change);
    if (list == null) {
      throw new IllegalArgumentException(
          "the cluster carries the SDK's ServerChange records (ToolsListChanged,"
              + " PromptsListChanged, ResourcesListChanged, ResourceUpdated), not "
              + change.getClass().getName());
    }
    return new Entry(LISTS_PREFIX + list, Map.of("changed", list));
  }

  private static String listOf(ServerChange change) {
    if (change instanceof ServerChange.ToolsListChanged) {
      return "tools";
    }
    if (change instanceof ServerChange.PromptsListChanged) {
      return "prompts";
    }
    if (change instanceof ServerChange.ResourcesListChanged) {
      return "resources";
    }
    return null;
  }

  /** The change a put under the feed's prefixes stands for; empty for anything else. */
  static Optional<ServerChange> published(Change c) {
    if (c.kind() != ChangeKind.PUT || !c.value().isJson()) {
      return Optional.empty();
    }
    JsonNode v;
    try {
      v = c.valueAs(JsonNode.class);
    } catch (RuntimeException e) {
      return Optional.empty();
    }
    JsonNode uri = v.path("uri");
    if (uri.isTextual() && !uri.asText().isEmpty()) {
      return Optional.of(new ServerChange.ResourceUpdated(uri.asText()));
    }
    return switch (v.path("changed").asText("")) {
      case "tools" -> Optional.of(new ServerChange.ToolsListChanged());
      case "prompts" -> Optional.of(new ServerChange.PromptsListChanged());
      case "resources" -> Optional.of(new ServerChange.ResourcesListChanged());
      default -> Optional.empty();
    };
  }

  /** The key name of any string: 26 characters of base32 over its SHA-256's first 16 bytes. */
  static String digestName(String s) {
    byte[] sum;
    try {
      sum = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
    StringBuilder out = new StringBuilder(26);
    int buffer = 0;
    int bits = 0;
    for (byte b : Arrays.copyOf(sum, 16)) {
      buffer = (buffer << 8) | (b & 0xff);
      bits += 8;
      while (bits >= 5) {
        out.append(BASE32[(buffer >>> (bits - 5)) & 31]);
        bits -= 5;
      }
    }
    if (bits > 0) {
      out.append(BASE32[(buffer << (5 - bits)) & 31]);
    }
    return out.toString();
  }
}
