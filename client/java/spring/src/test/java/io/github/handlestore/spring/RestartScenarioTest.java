package io.github.handlestore.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.testkit.SharedCluster;
import io.github.handlestore.mcpclient.testing.McpTestServers;
import io.github.handlestore.mcpclient.testing.TokenEndpoint;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proposal's scenario end to end (the Java SDK's issue #376): a client process ({@link
 * ScenarioClient}, a JVM of its own) signs in with client credentials against a token endpoint that
 * counts its requests, and talks to the SDK's own MCP servers, which require the bearer token. It
 * is killed with SIGKILL and started again: it reuses the token, the server metadata and the
 * session from the cluster, with no token request, no {@code server/discover} and no {@code
 * initialize}. A second process of the same user, in another working directory and through other
 * nodes (another machine), sees the same state.
 */
class RestartScenarioTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  static final String NS = "java-spring-restart";
  static TokenEndpoint auth;
  static McpTestServers servers;

  @BeforeAll
  static void start() {
    try (Client admin = CLUSTER.get().client(NS, b -> {})) {
      admin.keyRing().blocking().create();
    }
    auth = TokenEndpoint.start(OAuthSetup.CLIENT_ID, OAuthSetup.CLIENT_SECRET, 3600);
    servers = McpTestServers.start(auth::valid);
  }

  @AfterAll
  static void stop() {
    if (servers != null) {
      servers.close();
    }
    if (auth != null) {
      auth.close();
    }
  }

  @Test
  void aKilledClientComesBackWithoutANewOAuthFlowAndAnotherMachineSeesTheSameState(
      @TempDir Path machineA, @TempDir Path machineB) throws Exception {
    List<String> endpoints = CLUSTER.get().endpoints();
    Map<String, String> first = run(machineA, endpoints, "hold", true);
    assertEquals(1, auth.requests(), "token requests");
    assertEquals(1, servers.count("server/discover"));
    assertEquals(1, servers.count(McpTestServers.LEGACY_INITIALIZE));
    assertEquals("hello_alice", first.get("greeting"));
    assertEquals("the_handlestore_test_server", first.get("instructions"));

    Map<String, String> restarted = run(machineA, endpoints, "hold", true);
    assertEquals(first.get("token"), restarted.get("token"));
    assertEquals(first.get("session"), restarted.get("session"));
    assertEquals(first.get("instructions"), restarted.get("instructions"));

    List<String> others = new ArrayList<>(endpoints);
    Collections.rotate(others, -1);
    Map<String, String> elsewhere = run(machineB, others, "exit", false);
    assertNotEquals(first.get("dir"), elsewhere.get("dir"));
    assertEquals(first.get("token"), elsewhere.get("token"));
    assertEquals(first.get("session"), elsewhere.get("session"));
    assertEquals("hello_alice", elsewhere.get("greeting"));

    assertEquals(1, auth.requests(), "a restarted or second process asked for a new token");
    assertEquals(1, servers.count("server/discover"), "asked server/discover again");
    assertEquals(1, servers.count(McpTestServers.LEGACY_INITIALIZE), "initialized again");
    assertEquals(0, servers.count(McpTestServers.REFUSED));
  }

  /**
   * Starts the client process in {@code dir}, reads its RESULT line, and (with {@code kill}) kills
   * it with SIGKILL, as a crash would, or waits for it to exit.
   */
  static Map<String, String> run(Path dir, List<String> endpoints, String mode, boolean kill)
      throws IOException,
          InterruptedException,
          java.util.concurrent.ExecutionException,
          java.util.concurrent.TimeoutException {
    Path log = Files.createTempFile(dir, "client", ".err");
    ProcessBuilder pb =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                ScenarioClient.class.getName(),
                auth.uri().toString(),
                servers.modern().toString(),
                servers.legacyBase(),
                "alice",
                mode)
            .directory(dir.toFile())
            .redirectError(log.toFile());
    pb.environment().put("HANDLESTORE_ENDPOINTS", String.join(",", endpoints));
    pb.environment().put("HANDLESTORE_NAMESPACE", NS);
    Process p = pb.start();
    try {
      CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> resultLine(p));
      String result = line.get(120, TimeUnit.SECONDS);
      assertTrue(
          result != null,
          "the client process printed no RESULT; its stderr:\n" + Files.readString(log));
      if (kill) {
        p.destroyForcibly(); // SIGKILL: no shutdown hook, no graceful close
      }
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      if (kill) {
        assertEquals(137, p.exitValue(), "not killed by SIGKILL");
      } else {
        assertEquals(0, p.exitValue());
      }
      return fields(result);
    } finally {
      p.destroyForcibly();
    }
  }

  private static String resultLine(Process p) {
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String l = r.readLine(); l != null; l = r.readLine()) {
        if (l.startsWith("RESULT ")) {
          return l.substring("RESULT ".length());
        }
      }
      return null;
    } catch (IOException e) {
      return null;
    }
  }

  private static Map<String, String> fields(String line) {
    Map<String, String> out = new HashMap<>();
    for (String kv : line.split(" ")) {
      int eq = kv.indexOf('=');
      out.put(kv.substring(0, eq), kv.substring(eq + 1));
    }
    return out;
  }
}
