package io.github.handlestore.examples.cart;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a cart tool answers, before either MCP server turns it into its {@code CallToolResult}: a
 * JSON object (given as structured content and as its text), or an error's text ({@code isError}).
 *
 * @param structured the answer, or null for an error
 * @param error the error's text, or null
 */
public record ToolAnswer(Map<String, Object> structured, String error) {
  /** A successful answer. */
  static ToolAnswer ok(Map<String, Object> structured) {
    return new ToolAnswer(Collections.unmodifiableMap(new LinkedHashMap<>(structured)), null);
  }

  /** A tool error (the call reached the tool, which refused it). */
  static ToolAnswer error(String text) {
    return new ToolAnswer(null, text);
  }

  /** Whether this is a tool error. */
  public boolean isError() {
    return error != null;
  }

  /** The text content: the error, or the answer as compact JSON. */
  public String text() {
    return isError() ? error : CartJson.text(structured);
  }
}
