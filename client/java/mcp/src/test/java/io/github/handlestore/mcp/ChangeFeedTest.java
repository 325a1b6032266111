package io.github.handlestore.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.handlestore.client.Client;
import io.github.handlestore.client.testkit.Binary;
import io.github.handlestore.client.testkit.SharedCluster;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.server.feature.ServerChange;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.core.Disposable;
import reactor.core.publisher.Sinks;

/** The feed itself, in this JVM: two feeds as two replicas, the shared digests, bad input. */
class ChangeFeedTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  @Test
  void digestsAreTheSharedVectors() throws Exception {
    JsonNode vectors =
        new ObjectMapper()
            .readTree(Files.readString(Binary.repo().resolve("proto/vectors/mcp_events.json")));
    int n = 0;
    for (JsonNode v : vectors.get("digests")) {
      assertEquals(v.get("digest").asText(), ChangeLayout.digestName(v.get("input").asText()));
      n++;
    }
    assertEquals(5, n, "every digest vector checked");
  }

  @Test
  void onePublishesTheOtherHearsInOrder() throws Exception {
    try (Client one = CLUSTER.get().client("mcp-feed", c -> {});
        Client two = CLUSTER.get().client("mcp-feed", c -> {});
        ClusterChangeFeed publisher = ClusterChangeFeed.builder(one).open().join();
        ClusterChangeFeed listener = ClusterChangeFeed.builder(two).open().join()) {
      Sinks.Many<ServerChange> heard = Sinks.many().replay().all();
      Disposable sub = listener.changes().subscribe(heard::tryEmitNext);
      List<ServerChange> sent =
          List.of(
              new ServerChange.ToolsListChanged(),
              new ServerChange.ResourceUpdated("cart://a"),
              new ServerChange.PromptsListChanged(),
              new ServerChange.ResourcesListChanged(),
              new ServerChange.ResourceUpdated("cart://b"));
      for (ServerChange c : sent) {
        publisher.broadcast(c);
      }
      assertEquals(
          sent, heard.asFlux().take(sent.size()).collectList().block(Duration.ofSeconds(30)));
      sub.dispose();
      assertEquals(0, listener.listeners());
    }
  }

  @Test
  void aChangeNoOtherReplicaCouldReadIsRefused() {
    ServerChange custom =
        new ServerChange() {
          @Override
          public String method() {
            return "notifications/custom";
          }

          @Override
          public boolean isHonouredBy(McpSchema.SubscriptionFilter honoured) {
            return true;
          }
        };
    try (Client c = CLUSTER.get().client("mcp-feed", x -> {});
        ClusterChangeFeed feed = ClusterChangeFeed.builder(c).open().join()) {
      assertThrows(IllegalArgumentException.class, () -> feed.broadcast(custom));
      ExecutionException e =
          assertThrows(ExecutionException.class, () -> feed.publish(custom).get());
      assertInstanceOf(IllegalArgumentException.class, e.getCause());
      assertThrows(NullPointerException.class, () -> feed.broadcast(null));
      assertThrows(
          IllegalArgumentException.class,
          () -> ClusterChangeFeed.builder(c).followStore("no/t", "cart://"));
    }
  }
}
