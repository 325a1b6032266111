package io.github.handlestore.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.SharedCluster;
import io.github.handlestore.mcp.replica.Replica;
import io.modelcontextprotocol.modern.McpException;
import io.modelcontextprotocol.modern.McpSchema;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tasks (SEP-2663) across two real replicas: created through A (a tool answering {@code
 * CreateTaskResult}), polled ({@code tasks/get}), answered ({@code tasks/update}), finished and
 * cancelled ({@code tasks/cancel}) through B, after A was SIGKILLed; unknown and malformed ids, a
 * cancel of a finished task, a client without the extension.
 */
class TasksAcrossReplicasTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  private static final String NS = "mcp-tasks";
  private static Replica a;
  private static Replica b;

  @BeforeAll
  static void replicas() {
    Cluster cluster = CLUSTER.get();
    try (var client = cluster.client(NS, c -> {})) {
      client.keyRing().blocking().create();
    }
    a = Replica.start(cluster, NS, "A");
    b = Replica.start(cluster, NS, "B");
  }

  @AfterAll
  static void stop() {
    a.close();
    b.close();
  }

  private static Map<String, Object> get(Replica r, String taskId) {
    Map<String, Object> t = Sdk.task(r.url(), "tasks/get", Map.of("taskId", taskId));
    assertEquals("complete", t.get("resultType"));
    return t;
  }

  private static String tool(Replica r, String tool, Map<String, Object> args) {
    return Sdk.text(Sdk.client(r.url()).tool(tool).arguments(args).call());
  }

  private static String start(Replica r) {
    Map<String, Object> created = Sdk.callTool(r.url(), "start_job", Map.of(), true);
    assertEquals("task", created.get("resultType"));
    assertEquals("working", created.get("status"));
    assertFalse(created.containsKey("result"), "a CreateTaskResult carries no payload");
    return (String) created.get("taskId");
  }

  private static Map<?, ?> json(String text) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().readValue(text, Map.class);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The result fields but _meta (the SDK adds the server's info to every result). */
  private static Map<String, Object> fields(Map<String, Object> result) {
    Map<String, Object> f = new HashMap<>(result);
    f.remove("_meta");
    return f;
  }

  @Test
  void aTaskCreatedOnAIsPolledAnsweredAndFinishedOnBAfterAIsKilled() {
    String id = start(a);
    assertTrue(id.matches("task-[A-Z2-7]{26}"), id);

    Map<String, Object> working = get(b, id);
    assertEquals("working", working.get("status"));
    assertEquals("started on A", working.get("statusMessage"));
    assertEquals(3600, ((Number) working.get("ttlSeconds")).intValue());
    assertEquals(1000, ((Number) working.get("pollIntervalMilliseconds")).intValue());

    assertEquals("true", tool(a, "ask_job", Map.of("taskId", id, "key", "name")));
    Map<String, Object> asking = get(b, id);
    assertEquals("input_required", asking.get("status"));
    @SuppressWarnings("unchecked")
    Map<String, Object> requests = (Map<String, Object>) asking.get("inputRequests");
    assertEquals(List.of("name"), List.copyOf(requests.keySet()));

    a.kill();
    try {
      answerAndFinishOnB(id);
    } finally {
      a.restart();
    }
  }

  private static void answerAndFinishOnB(String id) {
    Map<String, Object> answer = Map.of("action", "accept", "content", Map.of("name", "Ada"));
    Map<String, Object> ack =
        Sdk.task(
            b.url(),
            "tasks/update",
            Map.of("taskId", id, "inputResponses", Map.of("name", answer, "never-asked", answer)));
    assertEquals(Map.of("resultType", "complete"), fields(ack));
    Map<String, Object> resumed = get(b, id);
    assertEquals("working", resumed.get("status"));
    assertNull(resumed.get("inputRequests"));

    assertEquals("true", tool(b, "finish_job", Map.of("taskId", id)));
    Map<String, Object> done = get(b, id);
    assertEquals("completed", done.get("status"));
    @SuppressWarnings("unchecked")
    Map<String, Object> content =
        ((List<Map<String, Object>>) ((Map<String, Object>) done.get("result")).get("content"))
            .get(0);
    String text = (String) content.get("text");
    assertTrue(text.startsWith("finished on B with "), text);
    assertEquals(Map.of("name", answer), json(text.substring("finished on B with ".length())));

    // A cancel of a finished task is acknowledged and changes nothing.
    assertEquals(
        Map.of("resultType", "complete"),
        fields(Sdk.task(b.url(), "tasks/cancel", Map.of("taskId", id))));
    assertEquals("completed", get(b, id).get("status"));
  }

  @Test
  void aTaskCancelledOnBStaysCancelled() {
    String id = start(a);
    Sdk.task(b.url(), "tasks/cancel", Map.of("taskId", id));
    assertEquals("cancelled", get(b, id).get("status"));
    assertEquals("cancelled", get(a, id).get("status"));
    // The work that ends later cannot undo it.
    assertEquals("false", tool(a, "finish_job", Map.of("taskId", id)));
    assertEquals("false", tool(a, "ask_job", Map.of("taskId", id, "key", "late")));
    assertEquals("cancelled", get(b, id).get("status"));
  }

  @Test
  void unknownAndMalformedIdsAndBadParams() {
    for (String id : List.of("task-AAAAAAAAAAAAAAAAAAAAAAAAAA", "../etc/passwd", "x", "task-")) {
      McpException e = assertThrows(McpException.class, () -> get(b, id));
      assertEquals(McpSchema.ErrorCodes.INVALID_PARAMS, e.error().code());
      assertEquals("Failed to retrieve task: Task not found", e.error().message());
      // update and cancel acknowledge any id (SEP-2663).
      assertEquals(
          Map.of("resultType", "complete"),
          fields(
              Sdk.task(b.url(), "tasks/update", Map.of("taskId", id, "inputResponses", Map.of()))));
      assertEquals(
          Map.of("resultType", "complete"),
          fields(Sdk.task(b.url(), "tasks/cancel", Map.of("taskId", id))));
    }
    McpException noId =
        assertThrows(McpException.class, () -> Sdk.task(b.url(), "tasks/get", Map.of()));
    assertEquals(McpSchema.ErrorCodes.INVALID_PARAMS, noId.error().code());
    assertEquals("params.taskId is required (a string)", noId.error().message());
    McpException numberId =
        assertThrows(McpException.class, () -> Sdk.task(b.url(), "tasks/get", Map.of("taskId", 7)));
    assertEquals(McpSchema.ErrorCodes.INVALID_PARAMS, numberId.error().code());
    McpException badResponses =
        assertThrows(
            McpException.class,
            () ->
                Sdk.task(
                    b.url(), "tasks/update", Map.of("taskId", start(a), "inputResponses", "yes")));
    assertEquals("params.inputResponses must be an object", badResponses.error().message());
  }

  @Test
  void theServerDeclaresTheExtensionAndNeverGivesATaskToAClientWithoutIt() {
    McpSchema.DiscoverResult found = Sdk.client(a.url()).discover();
    assertTrue(
        found.capabilities().extensions().containsKey("io.modelcontextprotocol/tasks"),
        String.valueOf(found.capabilities()));
    McpSchema.CallToolResult r = Sdk.client(a.url()).tool("start_job").call();
    assertTrue(r.isError());
    assertEquals("this tool runs as a task only", Sdk.text(r));
  }
}
