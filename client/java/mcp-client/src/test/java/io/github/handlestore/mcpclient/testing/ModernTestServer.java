package io.github.handlestore.mcpclient.testing;

import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.server.McpServer;
import io.modelcontextprotocol.modern.server.McpSyncResponse;
import io.modelcontextprotocol.modern.server.feature.McpSyncTool;
import io.modelcontextprotocol.modern.server.feature.McpSyncToolRepository;
import io.modelcontextprotocol.modern.server.feature.ToolsFeature;
import io.modelcontextprotocol.modern.server.feature.ToolsPage;
import io.modelcontextprotocol.modern.server.transport.HttpServletMcpTransport;
import java.util.List;
import java.util.Map;

/**
 * The modern MCP server of the tests: one tool, {@code greet}, and a discover result the client may
 * keep for ten minutes ({@code ttlMs}), per user ({@code private}).
 */
final class ModernTestServer {
  /** The server's name in its discover result's instructions. */
  static final String INSTRUCTIONS = "the handlestore test server";

  static final long DISCOVER_TTL_MS = 600_000;

  private static final McpSchema.Tool GREET =
      McpSchema.Tool.builder(
              "greet",
              Map.of("type", "object", "properties", Map.of("name", Map.of("type", "string"))))
          .description("Says hello")
          .build();

  private ModernTestServer() {}

  static HttpServletMcpTransport servlet() {
    McpServer server =
        McpServer.builder()
            .serverInfo(McpSchema.Implementation.builder("handlestore-test", "1.0.0").build())
            .instructions(INSTRUCTIONS)
            .feature(ToolsFeature.ofSync(new Tools()))
            .discoverCache(DISCOVER_TTL_MS, McpSchema.CacheScope.PRIVATE)
            .build();
    return HttpServletMcpTransport.builder(server).endpoint("/mcp").build();
  }

  private static final class Tools implements McpSyncToolRepository {
    @Override
    public ToolsPage list(
        io.modelcontextprotocol.modern.server.McpRequestContext ctx, String cursor) {
      return ToolsPage.of(List.of(GREET));
    }

    @Override
    public McpSyncTool find(
        io.modelcontextprotocol.modern.server.McpRequestContext ctx, String name) {
      return GREET.name().equals(name) ? McpSyncTool.of(GREET, Tools::greet) : null;
    }

    private static McpSyncResponse<McpSchema.CallToolOutcome> greet(
        io.modelcontextprotocol.modern.server.McpRequestContext ctx,
        McpSchema.CallToolRequest request) {
      Object name = request.arguments() == null ? null : request.arguments().get("name");
      return McpSyncResponse.result(
          McpSchema.CallToolResult.builder()
              .addContent(McpSchema.TextContent.builder("hello " + name).build())
              .build());
    }
  }
}
