package io.github.handlestore.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.testkit.SharedCluster;
import io.github.handlestore.mcpclient.AccessTokenSource;
import io.github.handlestore.mcpclient.BearerTokenCustomizer;
import io.github.handlestore.mcpclient.RefusedTokenHandler;
import io.github.handlestore.mcpclient.testing.McpTestServers;
import io.github.handlestore.mcpclient.testing.TokenEndpoint;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.client.McpClient;
import io.modelcontextprotocol.modern.client.McpSyncClient;
import io.modelcontextprotocol.modern.client.transport.HttpClientMcpTransport;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The SDK's modern client with Spring Security's tokens: a token the MCP server refuses (revoked)
 * is dropped from the cluster, the manager signs in anew once, the request is sent again and goes
 * through, and another process of the user sees the new token.
 */
class RefusedTokenClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  static final String NS = "java-spring-refused";
  static Client client;
  static TokenEndpoint auth;
  static McpTestServers servers;

  @BeforeAll
  static void start() {
    client = CLUSTER.get().client(NS, b -> {});
    client.keyRing().blocking().create();
    auth = TokenEndpoint.start(OAuthSetup.CLIENT_ID, OAuthSetup.CLIENT_SECRET, 3600);
    servers = McpTestServers.start(auth::valid);
  }

  @AfterAll
  static void stop() throws Exception {
    for (AutoCloseable c : new AutoCloseable[] {servers, auth, client}) {
      if (c != null) {
        c.close();
      }
    }
  }

  @Test
  void aRevokedTokenIsReplacedOnceAndTheCallGoesThrough() {
    OAuthSetup oauth = new OAuthSetup(client, auth.uri());
    AccessTokenSource tokens =
        new OAuth2AccessTokenSource(oauth.manager, oauth.service, OAuthSetup.REGISTRATION, "zoe");
    McpSyncClient mcp =
        McpClient.sync(
                HttpClientMcpTransport.builder(servers.modern())
                    .requestCustomizer(new BearerTokenCustomizer(tokens))
                    .authorizationErrorHandler(new RefusedTokenHandler(tokens))
                    .build())
            .build();
    assertEquals("hello zoe", greet(mcp));
    String old = oauth.authorize("zoe").getAccessToken().getTokenValue();
    assertEquals(1, auth.requests());

    auth.revoke(old);
    assertEquals("hello zoe", greet(mcp));
    assertEquals(2, auth.requests());
    assertEquals(1, servers.count(McpTestServers.REFUSED));
    String now =
        new OAuthSetup(client, auth.uri())
            .service
            .loadAuthorizedClient(OAuthSetup.REGISTRATION, "zoe")
            .getAccessToken()
            .getTokenValue();
    assertNotEquals(old, now);
  }

  static String greet(McpSyncClient mcp) {
    McpSchema.CallToolResult r = mcp.tool("greet").arguments(Map.of("name", "zoe")).call();
    return ((McpSchema.TextContent) r.content().get(0)).text();
  }
}
