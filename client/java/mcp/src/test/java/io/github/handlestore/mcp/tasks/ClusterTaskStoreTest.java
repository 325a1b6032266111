package io.github.handlestore.mcp.tasks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.testkit.SharedCluster;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.TypeRef;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The task store's rules, with two stores on two clients as two replicas. */
class ClusterTaskStoreTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  private static Client one;
  private static Client two;
  private static ClusterTaskStore a;
  private static ClusterTaskStore b;

  @BeforeAll
  static void stores() {
    one = CLUSTER.get().client("mcp-task-store", c -> {});
    two = CLUSTER.get().client("mcp-task-store", c -> {});
    a = ClusterTaskStore.of(one);
    b = ClusterTaskStore.of(two);
  }

  @AfterAll
  static void close() {
    one.close();
    two.close();
  }

  @Test
  void aFinalStatusIsFinalWhateverRacesIt() {
    for (int round = 0; round < 10; round++) {
      String id = a.create().join().taskId();
      CompletableFuture<Boolean> done =
          a.setCompleted(id, Map.of("content", List.of(), "isError", false));
      CompletableFuture<Boolean> cancelled = b.setCancelled(id);
      boolean completedWon = done.join();
      assertNotEquals(completedWon, cancelled.join(), "exactly one wins");
      TaskStatus s = b.get(id).join().orElseThrow().status();
      assertEquals(completedWon ? TaskStatus.COMPLETED : TaskStatus.CANCELLED, s);
      assertFalse(a.setWorking(id, "again").join());
      assertFalse(b.setFailed(id, Map.of("code", -32603, "message", "late"), "late").join());
      assertEquals(s, a.get(id).join().orElseThrow().status());
    }
  }

  @Test
  void inputRequestsAreAnsweredOnceAndTheirKeysNeverReused() {
    String id = a.create().join().taskId();
    Map<String, Object> ask = Map.of("method", "elicitation/create", "params", Map.of());
    assertTrue(a.setInputRequests(id, Map.of("k1", ask, "k2", ask)).join());
    // A partial answer leaves the task waiting for the rest.
    assertTrue(b.resolveInputResponses(id, Map.of("k1", Map.of("action", "accept"))).join());
    McpTask waiting = a.get(id).join().orElseThrow();
    assertEquals(TaskStatus.INPUT_REQUIRED, waiting.status());
    assertEquals(List.of("k2"), List.copyOf(waiting.inputRequests().keySet()));
    // A key not outstanding is ignored.
    assertFalse(b.resolveInputResponses(id, Map.of("k1", Map.of("action", "decline"))).join());
    assertTrue(b.resolveInputResponses(id, Map.of("k2", Map.of("action", "decline"))).join());
    assertEquals(TaskStatus.WORKING, a.get(id).join().orElseThrow().status());
    assertEquals(
        Map.of("k1", Map.of("action", "accept"), "k2", Map.of("action", "decline")),
        a.takeInputResponses(id).join());
    assertEquals(Map.of(), a.takeInputResponses(id).join(), "taken once");
    CompletionException reused =
        assertThrows(
            CompletionException.class, () -> a.setInputRequests(id, Map.of("k1", ask)).join());
    assertInstanceOf(IllegalArgumentException.class, reused.getCause());
  }

  @Test
  void theWireShapeIsSep2663s() {
    ClusterTaskStore unlimited =
        ClusterTaskStore.builder(one)
            .ttl(Duration.ofMillis(-1))
            .pollInterval(Duration.ofMillis(250))
            .build();
    McpTask t = unlimited.create().join();
    Map<String, Object> detailed = asWritten(TaskResult.detailed(t));
    assertEquals("complete", detailed.get("resultType"));
    assertTrue(detailed.containsKey("ttlSeconds"), "ttlSeconds is written, null: unlimited");
    assertEquals(null, detailed.get("ttlSeconds"));
    assertEquals(250, ((Number) detailed.get("pollIntervalMilliseconds")).intValue());
    assertEquals("working", detailed.get("status"));

    assertTrue(unlimited.setCompleted(t.taskId(), Map.of("isError", false)).join());
    McpTask done = unlimited.get(t.taskId()).join().orElseThrow();
    Map<String, Object> created = asWritten(TaskResult.created(done));
    assertEquals("task", created.get("resultType"));
    assertFalse(created.containsKey("result"), "a CreateTaskResult carries no payload");
    assertEquals(Map.of("isError", false), asWritten(TaskResult.detailed(done)).get("result"));
    assertEquals(Map.of("resultType", "complete"), asWritten(TaskResult.ack()));
  }

  @Test
  void idsThatAreNotTasksAreAbsent() {
    for (String id :
        List.of(
            "",
            "x",
            "../t",
            "task-AAAAAAAAAAAAAAAAAAAAAAAAAA",
            "cart-AAAAAAAAAAAAAAAAAAAAAAAAAA")) {
      assertTrue(a.get(id).join().isEmpty(), id);
      assertFalse(a.setCancelled(id).join(), id);
    }
    assertTrue(a.get(null).join().isEmpty());
  }

  /** The result as the SDK's server writes it (through its JSON mapper). */
  private static Map<String, Object> asWritten(TaskResult r) {
    return McpJsonDefaults.getMapper().convertValue(r, new TypeRef<Map<String, Object>>() {});
  }
}
