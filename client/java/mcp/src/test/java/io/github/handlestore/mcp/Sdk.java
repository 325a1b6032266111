package io.github.handlestore.mcp;

import io.modelcontextprotocol.modern.JsonRpc;
import io.modelcontextprotocol.modern.McpException;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.client.McpClient;
import io.modelcontextprotocol.modern.client.McpSyncClient;
import io.modelcontextprotocol.modern.client.transport.HttpClientMcpTransport;
import io.modelcontextprotocol.modern.client.transport.McpHttpRequestCustomizer;
import io.modelcontextprotocol.modern.client.transport.McpTransportRequest;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The SDK's own client, as the tests use it: {@link McpSyncClient} over Streamable HTTP for what it
 * has a method for, and its transport ({@link HttpClientMcpTransport}, the same HTTP exchange the
 * client makes, headers included) for the tasks methods and task-returning calls, which its client
 * API does not have yet (it refuses a result whose resultType is "task").
 */
final class Sdk {
  private static final AtomicLong IDS = new AtomicLong();

  private Sdk() {}

  /** A client of {@code url} (as user "alice"). */
  static McpSyncClient client(String url) {
    return client(url, "alice");
  }

  /** A client of {@code url} whose requests say they come from {@code user}. */
  static McpSyncClient client(String url, String user) {
    return McpClient.sync(transport(url, user))
        .clientInfo(McpSchema.Implementation.builder("handlestore-mcp-test", "1").build())
        .roundTimeout(Duration.ofSeconds(30))
        .build();
  }

  static HttpClientMcpTransport transport(String url, String user) {
    return HttpClientMcpTransport.builder(url)
        .requestCustomizer(
            McpHttpRequestCustomizer.fromSync((req, headers, ctx) -> headers.set("X-User", user)))
        .build();
  }

  /**
   * One JSON-RPC request through the SDK's transport, with the per-request metadata its client
   * sends (protocol version, capabilities declaring the tasks extension or not); the result as a
   * map, or the error as the client raises it ({@link McpException}).
   */
  static Map<String, Object> rpc(
      String url, String method, String name, Map<String, Object> params, boolean tasks) {
    Map<String, Object> caps = new LinkedHashMap<>();
    if (tasks) {
      caps.put("extensions", Map.of("io.modelcontextprotocol/tasks", Map.of()));
    }
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put(McpSchema.MetaKeys.PROTOCOL_VERSION, McpSchema.LATEST_PROTOCOL_VERSION);
    meta.put(McpSchema.MetaKeys.CLIENT_CAPABILITIES, caps);
    Map<String, Object> p = new LinkedHashMap<>(params);
    p.put("_meta", meta);
    JsonRpc.JSONRPCRequest message = new JsonRpc.JSONRPCRequest(method, IDS.incrementAndGet(), p);
    McpTransportRequest request =
        McpTransportRequest.builder(message, McpSchema.LATEST_PROTOCOL_VERSION).name(name).build();
    JsonRpc.JSONRPCResponse response =
        transport(url, "alice")
            .exchange(request)
            .ofType(JsonRpc.JSONRPCResponse.class)
            .next()
            .block(Duration.ofSeconds(30));
    if (response == null) {
      throw new IllegalStateException(method + " got no response");
    }
    if (response.error() != null) {
      throw new McpException(response.error());
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> result = (Map<String, Object>) response.result();
    return result;
  }

  /** tasks/get, tasks/update or tasks/cancel (Mcp-Name is the task id, as SEP-2663 asks). */
  static Map<String, Object> task(String url, String method, Map<String, Object> params) {
    Object id = params.get("taskId");
    return rpc(url, method, id instanceof String s ? s : null, params, true);
  }

  /** A tools/call through the transport (it may answer a CreateTaskResult). */
  static Map<String, Object> callTool(
      String url, String tool, Map<String, Object> arguments, boolean tasks) {
    return rpc(url, "tools/call", tool, Map.of("name", tool, "arguments", arguments), tasks);
  }

  /** The text of a tool result's first content. */
  static String text(McpSchema.CallToolResult result) {
    return ((McpSchema.TextContent) result.content().get(0)).text();
  }
}
