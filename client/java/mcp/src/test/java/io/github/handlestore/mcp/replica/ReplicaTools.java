package io.github.handlestore.mcp.replica;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.handlestore.mcp.ClusterChangeFeed;
import io.github.handlestore.mcp.tasks.ClusterTaskStore;
import io.github.handlestore.mcp.tasks.McpTask;
import io.github.handlestore.mcp.tasks.TaskResult;
import io.github.handlestore.mcp.tasks.TasksFeature;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.server.McpRequestContext;
import io.modelcontextprotocol.modern.server.McpSyncResponse;
import io.modelcontextprotocol.modern.server.feature.McpSyncTool;
import io.modelcontextprotocol.modern.server.feature.McpSyncToolRepository;
import io.modelcontextprotocol.modern.server.feature.ServerChange;
import io.modelcontextprotocol.modern.server.feature.ToolsPage;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * The tools of a test replica, each exercising one seam the way a server author would:
 *
 * <ul>
 *   <li>{@code confirm}: MRTR; the first round answers input_required with a requestState naming
 *       the replica, the retry answers what the codec opened;
 *   <li>{@code touch}: broadcasts {@code count} changes of {@code kind} (tools, prompts, resources,
 *       or resource with {@code uri}: uri, uri-1, uri-2, ... for a count above one);
 *   <li>{@code feed_nodes}: the handlestore nodes serving the replica's feed watches;
 *   <li>{@code start_job}: a task (CreateTaskResult) if the request declared the extension;
 *   <li>{@code ask_job}: puts the task in input_required with an elicitation under {@code key};
 *   <li>{@code finish_job}: the work's end: takes the input responses that arrived (on any replica)
 *       and completes the task with them.
 * </ul>
 */
final class ReplicaTools implements McpSyncToolRepository {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String name;
  private final ClusterChangeFeed feed;
  private final io.modelcontextprotocol.modern.server.feature.McpChangeBroadcaster broadcaster;
  private final ClusterTaskStore tasks;
  private final Map<
          String,
          BiFunction<McpRequestContext, McpSchema.CallToolRequest, McpSchema.CallToolOutcome>>
      handlers = new LinkedHashMap<>();

  ReplicaTools(
      String name,
      ClusterChangeFeed feed,
      io.modelcontextprotocol.modern.server.feature.McpChangeBroadcaster broadcaster,
      ClusterTaskStore tasks) {
    this.name = name;
    this.feed = feed;
    this.broadcaster = broadcaster;
    this.tasks = tasks;
    handlers.put("confirm", this::confirm);
    handlers.put("touch", this::touch);
    handlers.put("feed_nodes", (ctx, r) -> text(String.join(",", feed.nodes())));
    handlers.put("start_job", this::startJob);
    handlers.put("ask_job", this::askJob);
    handlers.put("finish_job", this::finishJob);
  }

  @Override
  public ToolsPage list(McpRequestContext ctx, String cursor) {
    return ToolsPage.of(handlers.keySet().stream().map(ReplicaTools::definition).toList());
  }

  @Override
  public McpSyncTool find(McpRequestContext ctx, String tool) {
    var h = handlers.get(tool);
    if (h == null) {
      return null;
    }
    return McpSyncTool.of(definition(tool), (c, r) -> McpSyncResponse.result(h.apply(c, r)));
  }

  private static McpSchema.Tool definition(String tool) {
    return McpSchema.Tool.builder(tool, Map.of("type", "object")).build();
  }

  private McpSchema.CallToolOutcome confirm(McpRequestContext ctx, McpSchema.CallToolRequest r) {
    if (r.requestState() == null) {
      return McpSchema.InputRequiredResult.builder()
          .requestState("{\"cart\":\"c-1\",\"sealedBy\":\"" + name + "\"}")
          .build();
    }
    return text("opened " + r.requestState() + " on " + name);
  }

  private McpSchema.CallToolOutcome touch(McpRequestContext ctx, McpSchema.CallToolRequest r) {
    String kind = arg(r, "kind");
    int count = Integer.parseInt(String.valueOf(r.arguments().getOrDefault("count", "1")));
    for (int i = 0; i < count; i++) {
      broadcaster.broadcast(
          switch (kind) {
            case "tools" -> new ServerChange.ToolsListChanged();
            case "prompts" -> new ServerChange.PromptsListChanged();
            case "resources" -> new ServerChange.ResourcesListChanged();
            default ->
                new ServerChange.ResourceUpdated(
                    count == 1 ? arg(r, "uri") : arg(r, "uri") + "-" + i);
          });
    }
    return text("broadcast " + count + " by " + name);
  }

  private McpSchema.CallToolOutcome startJob(McpRequestContext ctx, McpSchema.CallToolRequest r) {
    if (!TasksFeature.clientSupports(ctx)) {
      return McpSchema.CallToolResult.builder()
          .addContent(new McpSchema.TextContent(null, "this tool runs as a task only", null))
          .isError(true)
          .build();
    }
    McpTask task = tasks.create("started on " + name).join();
    return TaskResult.created(task);
  }

  private McpSchema.CallToolOutcome askJob(McpRequestContext ctx, McpSchema.CallToolRequest r) {
    Map<String, Object> elicit =
        Map.of(
            "method",
            "elicitation/create",
            "params",
            Map.of(
                "mode",
                "form",
                "message",
                "Your name?",
                "requestedSchema",
                Map.of("type", "object", "properties", Map.of("name", Map.of("type", "string")))));
    boolean asked = tasks.setInputRequests(arg(r, "taskId"), Map.of(arg(r, "key"), elicit)).join();
    return text(String.valueOf(asked));
  }

  private McpSchema.CallToolOutcome finishJob(McpRequestContext ctx, McpSchema.CallToolRequest r) {
    String taskId = arg(r, "taskId");
    Map<String, Object> answers = tasks.takeInputResponses(taskId).join();
    String said;
    try {
      said = JSON.writeValueAsString(answers);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
    Map<String, Object> result =
        Map.of(
            "content",
            List.of(Map.of("type", "text", "text", "finished on " + name + " with " + said)),
            "isError",
            false);
    return text(String.valueOf(tasks.setCompleted(taskId, result).join()));
  }

  private static String arg(McpSchema.CallToolRequest r, String key) {
    Object v = r.arguments() == null ? null : r.arguments().get(key);
    if (v == null) {
      throw io.modelcontextprotocol.modern.McpException.invalidParams("missing argument " + key);
    }
    return String.valueOf(v);
  }

  private static McpSchema.CallToolResult text(String s) {
    return McpSchema.CallToolResult.builder()
        .addContent(new McpSchema.TextContent(null, s, null))
        .build();
  }
}
