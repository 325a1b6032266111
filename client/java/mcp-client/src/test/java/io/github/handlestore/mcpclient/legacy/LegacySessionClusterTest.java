package io.github.handlestore.mcpclient.legacy;

import static io.github.handlestore.client.testkit.Await.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.ClientStateStore;
import io.github.handlestore.client.testkit.SharedCluster;
import io.github.handlestore.mcpclient.AccessTokenSource;
import io.github.handlestore.mcpclient.testing.McpTestServers;
import io.github.handlestore.mcpclient.testing.TokenEndpoint;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.spec.McpSchema;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The SDK's legacy Streamable HTTP client with its session in the cluster, against the SDK's own
 * server (sessions in its memory) behind a bearer check: a second client of the same user (a
 * restarted process that never closed the first, or another machine) goes on in the same session
 * without an {@code initialize}; a session the server has lost is replaced once.
 */
class LegacySessionClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  static final String NS = "java-mcp-client-legacy";
  static Client first;
  static Client second;
  static TokenEndpoint auth;
  static McpTestServers servers;

  @BeforeAll
  static void start() {
    first = CLUSTER.get().client(NS, b -> {});
    List<String> other = new ArrayList<>(CLUSTER.get().endpoints());
    Collections.rotate(other, -1);
    second = CLUSTER.get().client(NS, b -> b.endpoints(other));
    first.keyRing().blocking().create();
    auth = TokenEndpoint.start("mcp-client", "secret", 3600);
    servers = McpTestServers.start(auth::valid);
  }

  @AfterAll
  static void stop() throws Exception {
    for (AutoCloseable c : new AutoCloseable[] {servers, auth, first, second}) {
      if (c != null) {
        c.close();
      }
    }
  }

  static ClientStateStore store(Client c, String key) {
    return value(ClientStateStore.fromCluster(c, key));
  }

  static McpSyncClient mcp(ClientStateStore store) {
    ClusterSession session = new ClusterSession(store, AccessTokenSource.of(store));
    return McpClient.sync(
            session.transport(
                HttpClientStreamableHttpTransport.builder(servers.legacyBase())
                    .endpoint("/legacy")))
        .requestTimeout(Duration.ofSeconds(20))
        .build();
  }

  static String session(McpSyncClient client) {
    McpSchema.CallToolResult r =
        client.callTool(McpSchema.CallToolRequest.builder("session").arguments(Map.of()).build());
    return ((McpSchema.TextContent) r.content().get(0)).text();
  }

  @Test
  void aRestartedClientGoesOnInTheSameSessionWithoutInitializing() {
    ClientStateStore mine = store(first, "legacy|alice");
    mine.blocking().setAccessToken(auth.issue());
    int inits = servers.count(McpTestServers.LEGACY_INITIALIZE);

    McpSyncClient one = mcp(mine);
    McpSchema.InitializeResult result = one.initialize();
    String id = session(one);
    assertEquals(inits + 1, servers.count(McpTestServers.LEGACY_INITIALIZE));
    assertEquals(Optional.of(id), mine.blocking().sessionId());
    assertEquals(Optional.of(result.protocolVersion()), mine.blocking().protocolVersion());
    // one is left as it is, as a killed process leaves it: no DELETE.

    ClientStateStore again = store(second, "legacy|alice");
    McpSyncClient two = mcp(again);
    McpSchema.InitializeResult resumed = two.initialize();
    assertEquals(result.serverInfo(), resumed.serverInfo());
    assertEquals(result.protocolVersion(), resumed.protocolVersion());
    assertEquals(id, session(two));
    assertEquals(inits + 1, servers.count(McpTestServers.LEGACY_INITIALIZE), "initialized again");
  }

  @Test
  void aSessionTheServerLostIsReplacedOnceAndKept() throws Exception {
    ClientStateStore mine = store(first, "legacy|bob");
    String token = auth.issue();
    mine.blocking().setAccessToken(token);
    McpSyncClient one = mcp(mine);
    String lost = session(one);
    delete(lost, token); // the server forgets it (as a restarted server would)

    McpSyncClient two = mcp(store(second, "legacy|bob"));
    two.initialize(); // from the cluster: the client cannot know yet
    int inits = servers.count(McpTestServers.LEGACY_INITIALIZE);
    assertThrows(RuntimeException.class, () -> session(two)); // 404: the SDK initializes anew
    String fresh = waitForNewSession(mine, lost);
    assertNotEquals(lost, fresh);
    assertEquals(fresh, session(two));
    assertEquals(inits + 1, servers.count(McpTestServers.LEGACY_INITIALIZE));
  }

  @Test
  void aGracefulCloseEndsTheSessionAndForgetsIt() {
    ClientStateStore mine = store(first, "legacy|carol");
    mine.blocking().setAccessToken(auth.issue());
    McpSyncClient one = mcp(mine);
    session(one);
    assertTrue(mine.blocking().sessionId().isPresent());
    assertTrue(one.closeGracefully());
    assertEquals(Optional.empty(), mine.blocking().sessionId());
  }

  static String waitForNewSession(ClientStateStore store, String old) throws InterruptedException {
    for (int i = 0; i < 200; i++) {
      Optional<String> now = store.blocking().sessionId();
      if (now.isPresent() && !now.get().equals(old)) {
        return now.get();
      }
      Thread.sleep(50);
    }
    throw new AssertionError("no new session was stored");
  }

  static void delete(String session, String token) throws Exception {
    HttpResponse<Void> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(servers.legacyBase() + "/legacy"))
                    .header("Mcp-Session-Id", session)
                    .header("Authorization", "Bearer " + token)
                    .DELETE()
                    .build(),
                HttpResponse.BodyHandlers.discarding());
    assertEquals(200, r.statusCode() / 100 * 100);
  }
}
