package io.github.handlestore.mcp.tasks;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Map;

/**
 * A task as SEP-2663 shows it ({@code DetailedTask}): what {@code tasks/get} answers, with the
 * payload of its status inlined ({@code inputRequests} while input is required, {@code result} once
 * completed, {@code error} once failed). Times are ISO 8601 strings, as on the wire.
 *
 * @param taskId the task's id: a handle id, 128 random bits (unguessable, as the SEP requires)
 * @param status its status
 * @param statusMessage what to tell about it (optional)
 * @param createdAt when it was created
 * @param lastUpdatedAt when it last changed
 * @param ttlSeconds its time to live from creation, null for unlimited (always written)
 * @param pollIntervalMilliseconds how often to poll it (optional)
 * @param inputRequests the outstanding server-to-client requests, by key ({@code input_required})
 * @param result the request's result ({@code completed})
 * @param error the JSON-RPC error it failed with ({@code failed})
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
public record McpTask(
    @JsonProperty("taskId") String taskId,
    @JsonProperty("status") TaskStatus status,
    @JsonProperty("statusMessage") String statusMessage,
    @JsonProperty("createdAt") String createdAt,
    @JsonProperty("lastUpdatedAt") String lastUpdatedAt,
    @JsonProperty("ttlSeconds") @JsonInclude(JsonInclude.Include.ALWAYS) Long ttlSeconds,
    @JsonProperty("pollIntervalMilliseconds") Long pollIntervalMilliseconds,
    @JsonProperty("inputRequests") Map<String, Object> inputRequests,
    @JsonProperty("result") Map<String, Object> result,
    @JsonProperty("error") Map<String, Object> error) {

  /** This task moved to {@code status} at {@code now}, with its payload fields cleared. */
  McpTask moved(TaskStatus next, String message, String now) {
    return new McpTask(
        taskId,
        next,
        message,
        createdAt,
        now,
        ttlSeconds,
        pollIntervalMilliseconds,
        null,
        null,
        null);
  }

  /** This task with its status payload. */
  McpTask with(
      Map<String, Object> requests, Map<String, Object> taskResult, Map<String, Object> err) {
    return new McpTask(
        taskId,
        status,
        statusMessage,
        createdAt,
        lastUpdatedAt,
        ttlSeconds,
        pollIntervalMilliseconds,
        requests,
        taskResult,
        err);
  }
}
