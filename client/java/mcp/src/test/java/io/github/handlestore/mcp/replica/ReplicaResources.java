package io.github.handlestore.mcp.replica;

import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.server.McpRequestContext;
import io.modelcontextprotocol.modern.server.McpSyncResponse;
import io.modelcontextprotocol.modern.server.feature.McpSyncResource;
import io.modelcontextprotocol.modern.server.feature.McpSyncResourceRepository;
import io.modelcontextprotocol.modern.server.feature.ResourcesPage;
import java.util.List;

/** Carts as resources a client may subscribe to ({@code cart://<anything>}). */
final class ReplicaResources implements McpSyncResourceRepository {
  @Override
  public ResourcesPage list(McpRequestContext ctx, String cursor) {
    return ResourcesPage.of(List.of(McpSchema.Resource.builder("cart://1", "cart 1").build()));
  }

  @Override
  public McpSyncResource find(McpRequestContext ctx, String uri) {
    if (!uri.startsWith("cart://")) {
      return null;
    }
    return McpSyncResource.of(
        (c, request) ->
            McpSyncResponse.result(
                McpSchema.ReadResourceResult.builder(
                        List.of(
                            new McpSchema.TextResourceContents(
                                request.uri(), "application/json", "{}", null)))
                    .build()));
  }

  @Override
  public boolean supportsSubscribe() {
    return true;
  }
}
