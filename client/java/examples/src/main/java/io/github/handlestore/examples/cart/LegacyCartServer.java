package io.github.handlestore.examples.cart;

import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpStatelessServerFeatures;
import io.modelcontextprotocol.server.transport.HttpServletStatelessServerTransport;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import java.util.List;
import java.util.Map;

/**
 * The cart server for the handshake era (2025-11-25 and older: {@code initialize}, then each
 * request on its own): the SDK's stateless Streamable HTTP server ({@link
 * HttpServletStatelessServerTransport}), which keeps no session, answers every request in JSON and
 * answers GET with 405. The modern server refuses {@code initialize}, and the twins serve both
 * eras, so this one serves the same tools to clients that still shake hands.
 */
final class LegacyCartServer {
  private LegacyCartServer() {}

  /** The servlet serving {@code tools} at {@code endpoint}. */
  static HttpServletStatelessServerTransport servlet(CartTools tools, String endpoint) {
    HttpServletStatelessServerTransport transport =
        HttpServletStatelessServerTransport.builder().messageEndpoint(endpoint).build();
    McpServer.sync(transport)
        .serverInfo(CartServer.NAME, CartServer.VERSION)
        .capabilities(
            McpSchema.ServerCapabilities.builder().tools(false).resources(false, false).build())
        .tools(ToolDefinition.ALL.stream().map(d -> tool(tools, d)).toList())
        .resourceTemplates(cartResource(tools))
        // A tool blocks on the store: run it on the request's thread, as the modern server does.
        .immediateExecution(true)
        .build();
    return transport;
  }

  private static McpStatelessServerFeatures.SyncToolSpecification tool(
      CartTools tools, ToolDefinition d) {
    McpSchema.Tool tool =
        McpSchema.Tool.builder(d.name(), d.inputSchema()).description(d.description()).build();
    return McpStatelessServerFeatures.SyncToolSpecification.builder()
        .tool(tool)
        .callHandler((ctx, request) -> result(tools.call(d.name(), request.arguments())))
        .build();
  }

  private static McpSchema.CallToolResult result(ToolAnswer a) {
    McpSchema.CallToolResult.Builder r =
        McpSchema.CallToolResult.builder().addTextContent(a.text()).isError(a.isError());
    if (!a.isError()) {
      r.structuredContent(a.structured());
    }
    return r.build();
  }

  private static McpStatelessServerFeatures.SyncResourceTemplateSpecification cartResource(
      CartTools tools) {
    McpSchema.ResourceTemplate template =
        McpSchema.ResourceTemplate.builder(ModernCartServer.TEMPLATE, "cart")
            .description("A cart, as get_cart shows it.")
            .mimeType("application/json")
            .build();
    return new McpStatelessServerFeatures.SyncResourceTemplateSpecification(
        template,
        (ctx, request) -> {
          String uri = request.uri();
          String json =
              tools
                  .readResource(uri)
                  .orElseThrow(
                      () ->
                          McpError.builder(McpSchema.ErrorCodes.RESOURCE_NOT_FOUND)
                              .message("Resource not found")
                              .data(Map.of("uri", uri))
                              .build());
          return McpSchema.ReadResourceResult.builder(
                  List.of(
                      McpSchema.TextResourceContents.builder(uri, json)
                          .mimeType("application/json")
                          .build()))
              .build();
        });
  }
}
