package io.github.handlestore.mcp.tasks;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.modelcontextprotocol.modern.McpSchema;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The results SEP-2663 defines, as the SDK's server writes a result (its JSON mapper turns a result
 * into an object, then adds {@code _meta}): {@link #created} is {@code CreateTaskResult} ({@code
 * resultType: "task"}, what a tool returns in lieu of its {@code CallToolResult}), {@link
 * #detailed} is {@code GetTaskResult} ({@code resultType: "complete"} and the {@code DetailedTask}
 * inlined), {@link #ack} the empty acknowledgement of {@code tasks/update} and {@code
 * tasks/cancel}.
 */
public final class TaskResult implements McpSchema.CallToolOutcome {
  /** The {@code resultType} of a {@code CreateTaskResult}. */
  public static final String TASK = "task";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<LinkedHashMap<String, Object>> OBJECT =
      new TypeReference<>() {};

  private final String resultType;
  private final Map<String, Object> fields;

  private TaskResult(String resultType, Map<String, Object> fields) {
    this.resultType = resultType;
    this.fields = Collections.unmodifiableMap(fields);
  }

  /**
   * A tool's answer that its work goes on as {@code task}: return it from the tool only when the
   * request declared the extension ({@link TasksFeature#clientSupports}). Carries the task's
   * metadata, never its payload ({@code inputRequests}, {@code result}, {@code error}).
   */
  public static TaskResult created(McpTask task) {
    return new TaskResult(TASK, fieldsOf(task.with(null, null, null), TASK));
  }

  /** What {@code tasks/get} answers for {@code task}. */
  public static TaskResult detailed(McpTask task) {
    return new TaskResult(McpSchema.ResultType.COMPLETE, fieldsOf(task, "complete"));
  }

  /** The empty acknowledgement of {@code tasks/update} and {@code tasks/cancel}. */
  public static TaskResult ack() {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("resultType", McpSchema.ResultType.COMPLETE);
    return new TaskResult(McpSchema.ResultType.COMPLETE, f);
  }

  private static Map<String, Object> fieldsOf(McpTask task, String resultType) {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("resultType", resultType);
    f.putAll(JSON.convertValue(task, OBJECT));
    return f;
  }

  @Override
  @JsonIgnore
  public String resultType() {
    return resultType;
  }

  @Override
  @JsonIgnore
  public Map<String, Object> meta() {
    return null;
  }

  /** The result's fields as they are written (the task's, and {@code resultType}). */
  @JsonAnyGetter
  public Map<String, Object> fields() {
    return fields;
  }

  @Override
  public String toString() {
    return "TaskResult" + fields;
  }
}
