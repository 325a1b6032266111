package io.github.handlestore.mcp.tasks;

import com.fasterxml.jackson.annotation.JsonProperty;

/** A task's status (SEP-2663 §Task Status); the last three are final. */
public enum TaskStatus {
  @JsonProperty("working")
  WORKING,
  @JsonProperty("input_required")
  INPUT_REQUIRED,
  @JsonProperty("completed")
  COMPLETED,
  @JsonProperty("failed")
  FAILED,
  @JsonProperty("cancelled")
  CANCELLED;

  /** Whether nothing changes the task any more. */
  public boolean isTerminal() {
    return this == COMPLETED || this == FAILED || this == CANCELLED;
  }
}
