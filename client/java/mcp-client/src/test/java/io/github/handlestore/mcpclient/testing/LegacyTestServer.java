package io.github.handlestore.mcpclient.testing;

import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema;
import java.util.List;
import java.util.Map;

/**
 * The legacy Streamable HTTP MCP server of the tests (sessions kept in its memory): one tool,
 * {@code session}, that answers the id of the session it was called in, so a test sees whether a
 * restarted client went on with the same one.
 */
final class LegacyTestServer {
  private LegacyTestServer() {}

  static HttpServletStreamableServerTransportProvider servlet(String endpoint) {
    HttpServletStreamableServerTransportProvider provider =
        HttpServletStreamableServerTransportProvider.builder().mcpEndpoint(endpoint).build();
    McpSchema.Tool tool =
        McpSchema.Tool.builder("session", Map.of("type", "object"))
            .description("The session id of this call")
            .build();
    McpServer.sync(provider)
        .serverInfo("handlestore-legacy-test", "1.0.0")
        .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build())
        .tools(
            List.of(
                McpServerFeatures.SyncToolSpecification.builder()
                    .tool(tool)
                    .callHandler(
                        (exchange, request) ->
                            McpSchema.CallToolResult.builder()
                                .content(
                                    List.of(
                                        McpSchema.TextContent.builder(exchange.sessionId())
                                            .build()))
                                .build())
                    .build()))
        .build();
    return provider;
  }
}
