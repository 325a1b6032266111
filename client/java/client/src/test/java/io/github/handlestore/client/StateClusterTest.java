package io.github.handlestore.client;

import static io.github.handlestore.client.testkit.Await.error;
import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.errors.RevisionMismatchException;
import io.github.handlestore.client.testkit.Cluster;
import io.github.handlestore.client.testkit.SharedCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The state tool on a real cluster: CRUD, pages, batches, TTLs and namespaces. */
class StateClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  static Client client;

  @BeforeAll
  static void connect() {
    client = CLUSTER.get().client("java-state", b -> {});
  }

  @AfterAll
  static void close() {
    if (client != null) {
      client.close();
    }
  }

  @Test
  void storeRetrieveExistsDelete() {
    BlockingStateTool tool = client.stateTool().blocking();
    long rev = tool.store("checkpoints/agent-7/latest", Map.of("step", 3));
    StateEntry e = tool.retrieve("checkpoints/agent-7/latest").orElseThrow();
    assertEquals("{\"step\":3}", e.value().jsonText());
    assertEquals(rev, e.modRevision());
    assertEquals(3, tool.get("checkpoints/agent-7/latest", Map.class).orElseThrow().get("step"));
    assertTrue(tool.exists("checkpoints/agent-7/latest"));
    assertEquals(1, tool.delete("checkpoints/agent-7/latest").count());
    assertFalse(tool.exists("checkpoints/agent-7/latest"));
    assertTrue(tool.retrieve("checkpoints/agent-7/latest").isEmpty());
    assertEquals(0, tool.delete("checkpoints/agent-7/latest").count());
  }

  @Test
  void bytesStayBytesAndJsonTextStaysAsGiven() {
    BlockingStateTool tool = client.stateTool().blocking();
    tool.store("blob", new byte[] {0, 1, (byte) 0xff});
    StateValue v = tool.retrieve("blob").orElseThrow().value();
    assertTrue(v.isBytes());
    assertArrayEquals(new byte[] {0, 1, (byte) 0xff}, v.bytes());
    tool.store("raw", StateValue.json("{\"a\":[1,2]}"));
    assertEquals("{\"a\":[1,2]}", tool.retrieve("raw").orElseThrow().value().jsonText());
  }

  @Test
  void aCompareAndSetStoreAndDelete() {
    BlockingStateTool tool = client.stateTool().blocking();
    long first = tool.store("cas/k", 1, StoreOptions.DEFAULT.withExpectedRevision(0));
    error(
        RevisionMismatchException.class,
        tool.async().store("cas/k", 2, StoreOptions.DEFAULT.withExpectedRevision(0)));
    long second = tool.store("cas/k", 2, StoreOptions.DEFAULT.withExpectedRevision(first));
    error(RevisionMismatchException.class, tool.async().delete("cas/k", first));
    assertEquals(1, tool.delete("cas/k", second).count());
  }

  @Test
  void listPagesInKeyOrderAndScanReadsThemAll() {
    BlockingStateTool tool = client.stateTool().blocking();
    List<StoreItem> items = new ArrayList<>();
    IntStream.range(0, 25).forEach(i -> items.add(StoreItem.of(String.format("list/%03d", i), i)));
    tool.store("listx", "outside the prefix");
    tool.batchStore(items);
    ListPage first = tool.list("list/", ListOptions.DEFAULT.withLimit(10).withValues(true));
    assertEquals(10, first.entries().size());
    assertEquals("list/000", first.entries().get(0).key());
    assertEquals("0", first.entries().get(0).value().jsonText());
    assertFalse(first.nextPageToken().isEmpty());
    ListPage bare = tool.list("list/", ListOptions.DEFAULT.withLimit(10));
    assertTrue(bare.entries().get(0).value().isNone());
    List<String> all =
        tool.scan("list/", ListOptions.DEFAULT.withLimit(7)).map(StateEntry::key).toList();
    assertEquals(25, all.size());
    assertEquals("list/024", all.get(24));
    Deleted d = tool.deletePrefix("list/", 10);
    assertEquals(10, d.count());
    assertTrue(d.more());
    assertEquals(15, tool.deletePrefix("list/", 0).count());
    assertTrue(tool.exists("listx"));
  }

  @Test
  void aBatchStoreIsAllOrNothingAndABatchRetrieveOneView() {
    BlockingStateTool tool = client.stateTool().blocking();
    long rev = tool.batchStore(List.of(StoreItem.of("batch/a", "A"), StoreItem.of("batch/b", "B")));
    List<StoreItem> failing =
        List.of(
            StoreItem.of("batch/c", "C"),
            new StoreItem("batch/a", "A2", StoreOptions.DEFAULT.withExpectedRevision(rev + 1000)));
    error(RevisionMismatchException.class, tool.async().batchStore(failing));
    assertFalse(tool.exists("batch/c"), "a failed batch wrote part of itself");
    List<Optional<StateEntry>> got =
        tool.batchRetrieve(List.of("batch/a", "batch/none", "batch/b"));
    assertEquals("\"A\"", got.get(0).orElseThrow().value().jsonText());
    assertTrue(got.get(1).isEmpty());
    assertEquals(rev, got.get(2).orElseThrow().modRevision());
  }

  @Test
  void theToolsDefaultTtlAndItsOwn() {
    StateTool shortLived = client.stateTool().withDefaultTtl(Duration.ofMillis(300));
    value(shortLived.store("ttl/default", 1));
    value(shortLived.store("ttl/never", 2, StoreOptions.DEFAULT.withTtl(Ttl.NEVER)));
    value(
        client
            .stateTool()
            .store("ttl/own", 3, StoreOptions.DEFAULT.withTtl(Duration.ofMillis(300))));
    Cluster.sleep(Duration.ofMillis(1200));
    assertFalse(value(shortLived.exists("ttl/default")));
    assertFalse(value(shortLived.exists("ttl/own")));
    assertTrue(value(shortLived.retrieve("ttl/never")).orElseThrow().expiresAt().isEmpty());
  }

  @Test
  void aNamespaceNeverSeesAnothersKeys() {
    Client other = client.withNamespace("java-state-other");
    value(client.stateTool().store("mine", "here"));
    assertFalse(value(other.stateTool().exists("mine")));
    assertEquals("java-state-other", other.namespace());
  }
}
