package io.github.handlestore.mcp.tasks;

import io.modelcontextprotocol.modern.McpException;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.server.McpAsyncResponse;
import io.modelcontextprotocol.modern.server.McpFeature;
import io.modelcontextprotocol.modern.server.McpRequestContext;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * SEP-2663's methods as an {@link McpFeature} (set with {@code McpServer.builder().feature(...)}),
 * served from a {@link ClusterTaskStore}, so that a task created through one replica is polled,
 * updated and cancelled through any other, and outlives the one that created it. The SDK has no
 * tasks module yet; this is the custom method family its {@code McpFeature} seam is for.
 *
 * <ul>
 *   <li>{@code tasks/get}: the task ({@code resultType: "complete"}, its status payload inlined);
 *       an unknown, expired or malformed id is -32602 "Failed to retrieve task: Task not found".
 *   <li>{@code tasks/update}: hands {@code inputResponses} to the task (responses to keys not
 *       outstanding are ignored) and acknowledges, for any task id, as the SEP requires.
 *   <li>{@code tasks/cancel}: cancels a task that is not final yet and acknowledges, for any task
 *       id; a completed, failed or cancelled task stays as it is.
 * </ul>
 *
 * A missing or non-string {@code taskId}, or an {@code inputResponses} that is not an object, is
 * -32602 with the reason. A store the cluster cannot reach in time is -32603 with the reason (the
 * SDK logs an {@code McpException} at debug level, without a stack). It declares the extension
 * {@value #EXTENSION} in the server's capabilities. {@code requestState} on these methods is not
 * used (the SEP lets a server omit it: the task id is the handle).
 */
public final class TasksFeature implements McpFeature {
  /** The extension's identifier. */
  public static final String EXTENSION = "io.modelcontextprotocol/tasks";

  static final String GET = "tasks/get";
  static final String UPDATE = "tasks/update";
  static final String CANCEL = "tasks/cancel";

  private final ClusterTaskStore store;

  /** The methods over {@code store}. */
  public TasksFeature(ClusterTaskStore store) {
    this.store = Objects.requireNonNull(store, "store");
  }

  /**
   * Whether the request declared the tasks extension: a tool may answer with {@link
   * TaskResult#created} only then (SEP-2663: never to a client that did not).
   */
  public static boolean clientSupports(McpRequestContext ctx) {
    Map<String, Map<String, Object>> ext = ctx.clientCapabilities().extensions();
    return ext != null && ext.containsKey(EXTENSION);
  }

  @Override
  public Set<String> methods() {
    return Set.of(GET, UPDATE, CANCEL);
  }

  @Override
  public void capabilities(McpSchema.ServerCapabilities.Builder builder) {
    builder.extension(EXTENSION, Map.of());
  }

  @Override
  public Mono<McpAsyncResponse<TaskResult>> handle(McpRequestContext ctx, Object params) {
    if (!(params instanceof Map<?, ?> p)) {
      return Mono.error(McpException.invalidParams("params must be an object"));
    }
    if (!(p.get("taskId") instanceof String taskId) || taskId.isEmpty()) {
      return Mono.error(McpException.invalidParams("params.taskId is required (a string)"));
    }
    return switch (ctx.method()) {
      case GET ->
          call(
              store.get(taskId),
              "retrieve",
              t ->
                  TaskResult.detailed(
                      t.orElseThrow(
                          () ->
                              McpException.invalidParams(
                                  "Failed to retrieve task: Task not found"))));
      case UPDATE -> update(taskId, p.get("inputResponses"));
      case CANCEL -> call(store.setCancelled(taskId), "cancel", done -> TaskResult.ack());
      default ->
          Mono.error(new McpException(McpSchema.ErrorCodes.METHOD_NOT_FOUND, "not a tasks method"));
    };
  }

  private Mono<McpAsyncResponse<TaskResult>> update(String taskId, Object responses) {
    if (!(responses instanceof Map<?, ?> r)) {
      return Mono.error(McpException.invalidParams("params.inputResponses must be an object"));
    }
    Map<String, Object> byKey = new java.util.LinkedHashMap<>();
    r.forEach((k, v) -> byKey.put(String.valueOf(k), v));
    return call(store.resolveInputResponses(taskId, byKey), "update", done -> TaskResult.ack());
  }

  /**
   * The store's answer as the feature's response; a failure of the store (not of the request) as
   * -32603 with its reason, so the client reads why and the server logs no stack.
   */
  private static <T> Mono<McpAsyncResponse<TaskResult>> call(
      CompletableFuture<T> pending, String what, Function<T, TaskResult> answer) {
    return Mono.fromFuture(pending)
        .onErrorMap(
            e -> !(e instanceof McpException),
            e ->
                new McpException(
                    McpSchema.ErrorCodes.INTERNAL_ERROR,
                    "Failed to " + what + " task: " + e.getMessage()))
        .map(v -> McpAsyncResponse.result(answer.apply(v)));
  }
}
