package io.github.handlestore.mcp.tasks;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one task's handle holds: the task as {@code tasks/get} shows it, the input responses that
 * arrived (through {@code tasks/update}, on any replica) and the work has not taken yet, and every
 * input request key ever answered (SEP-2663: a key is never reused within a task).
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
@JsonIgnoreProperties(ignoreUnknown = true)
record StoredTask(
    @JsonProperty("task") McpTask task,
    @JsonProperty("responses") Map<String, Object> responses,
    @JsonProperty("answered") List<String> answered) {

  StoredTask {
    responses =
        responses == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(responses));
    answered = answered == null ? List.of() : List.copyOf(answered);
  }
}
