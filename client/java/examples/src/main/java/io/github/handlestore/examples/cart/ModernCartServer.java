package io.github.handlestore.examples.cart;

import io.modelcontextprotocol.modern.McpException;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.server.McpRequestContext;
import io.modelcontextprotocol.modern.server.McpServer;
import io.modelcontextprotocol.modern.server.McpSyncResponse;
import io.modelcontextprotocol.modern.server.feature.McpSyncResource;
import io.modelcontextprotocol.modern.server.feature.McpSyncResourceRepository;
import io.modelcontextprotocol.modern.server.feature.McpSyncResourceTemplate;
import io.modelcontextprotocol.modern.server.feature.McpSyncTool;
import io.modelcontextprotocol.modern.server.feature.McpSyncToolRepository;
import io.modelcontextprotocol.modern.server.feature.ResourceTemplatesPage;
import io.modelcontextprotocol.modern.server.feature.ResourcesFeature;
import io.modelcontextprotocol.modern.server.feature.ResourcesPage;
import io.modelcontextprotocol.modern.server.feature.ToolsFeature;
import io.modelcontextprotocol.modern.server.feature.ToolsPage;
import io.modelcontextprotocol.modern.server.transport.HttpServletMcpTransport;
import java.util.List;
import java.util.Map;

/**
 * The cart server for protocol 2026-07-28 (each request carries its own envelope): mcp-core 2.2.0's
 * {@code io.modelcontextprotocol.modern} {@link McpServer}, served by its {@link
 * HttpServletMcpTransport}. Stateless by design: it keeps nothing between requests, so any replica
 * answers any call.
 */
final class ModernCartServer {
  /** The resource template's URI ({@code cart://{cart_id}}). */
  static final String TEMPLATE = CartTools.CART_URI + "{cart_id}";

  private static final int RESOURCE_NOT_FOUND = -32002;

  private ModernCartServer() {}

  /** The servlet serving {@code tools} at {@code endpoint}. */
  static HttpServletMcpTransport servlet(CartTools tools, String endpoint) {
    McpServer server =
        McpServer.builder()
            .serverInfo(
                McpSchema.Implementation.builder(CartServer.NAME, CartServer.VERSION).build())
            .requestStateCodec(new NoRequestState())
            .feature(ToolsFeature.ofSync(new Tools(tools)))
            .feature(ResourcesFeature.ofSync(new Resources(tools)))
            .build();
    return HttpServletMcpTransport.builder(server).endpoint(endpoint).build();
  }

  /** The four tools, listed and found by name. */
  private static final class Tools implements McpSyncToolRepository {
    private static final List<McpSchema.Tool> DEFINED =
        ToolDefinition.ALL.stream().map(Tools::definition).toList();

    private final CartTools tools;

    Tools(CartTools tools) {
      this.tools = tools;
    }

    @Override
    public ToolsPage list(McpRequestContext ctx, String cursor) {
      return ToolsPage.of(DEFINED);
    }

    @Override
    public McpSyncTool find(McpRequestContext ctx, String name) {
      return DEFINED.stream()
          .filter(t -> t.name().equals(name))
          .findFirst()
          .map(t -> McpSyncTool.of(t, (c, request) -> McpSyncResponse.result(call(request))))
          .orElse(null);
    }

    private McpSchema.CallToolOutcome call(McpSchema.CallToolRequest request) {
      ToolAnswer a = tools.call(request.name(), request.arguments());
      McpSchema.CallToolResult.Builder r =
          McpSchema.CallToolResult.builder()
              .addContent(McpSchema.TextContent.builder(a.text()).build())
              .isError(a.isError());
      if (!a.isError()) {
        r.structuredContent(a.structured());
      }
      return r.build();
    }

    private static McpSchema.Tool definition(ToolDefinition d) {
      return McpSchema.Tool.builder(d.name(), d.inputSchema()).description(d.description()).build();
    }
  }

  /** {@code cart://<cart_id>}: a cart, as get_cart shows it. */
  private static final class Resources implements McpSyncResourceRepository {
    private static final McpSchema.ResourceTemplate CART =
        McpSchema.ResourceTemplate.builder(TEMPLATE, "cart")
            .description("A cart, as get_cart shows it.")
            .mimeType("application/json")
            .build();

    private final CartTools tools;

    Resources(CartTools tools) {
      this.tools = tools;
    }

    @Override
    public ResourcesPage list(McpRequestContext ctx, String cursor) {
      return ResourcesPage.of(List.of());
    }

    @Override
    public ResourceTemplatesPage listTemplates(McpRequestContext ctx, String cursor) {
      return ResourceTemplatesPage.of(List.of(CART));
    }

    @Override
    public McpSyncResourceTemplate findTemplate(McpRequestContext ctx, String uriTemplate) {
      return TEMPLATE.equals(uriTemplate) ? McpSyncResourceTemplate.of(CART) : null;
    }

    @Override
    public McpSyncResource find(McpRequestContext ctx, String uri) {
      if (!uri.startsWith(CartTools.CART_URI)) {
        return null;
      }
      return McpSyncResource.of((c, request) -> McpSyncResponse.result(read(request.uri())));
    }

    private McpSchema.ReadResourceResult read(String uri) {
      String json =
          tools
              .readResource(uri)
              .orElseThrow(
                  () ->
                      new McpException(
                          RESOURCE_NOT_FOUND, "Resource not found", Map.of("uri", uri)));
      return McpSchema.ReadResourceResult.builder(
              List.of(new McpSchema.TextResourceContents(uri, "application/json", json, null)))
          .build();
    }
  }
}
