package io.github.handlestore.spring;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.ClientStateStore;
import io.github.handlestore.mcpclient.AccessTokenSource;
import io.github.handlestore.mcpclient.BearerTokenCustomizer;
import io.github.handlestore.mcpclient.ClusterDiscovery;
import io.github.handlestore.mcpclient.RefusedTokenHandler;
import io.github.handlestore.mcpclient.legacy.ClusterSession;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.client.McpClient;
import io.modelcontextprotocol.modern.client.McpSyncClient;
import io.modelcontextprotocol.modern.client.transport.HttpClientMcpTransport;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * The client process of the proposal's scenario, started by {@link RestartScenarioTest} as a JVM of
 * its own ({@code java -cp <test classpath>}, a working directory of its own): a user's MCP client
 * with Spring Security's client-credentials sign-in, whose token, session and server metadata live
 * in the cluster ({@code HANDLESTORE_ENDPOINTS}, {@code HANDLESTORE_NAMESPACE}). It talks to the
 * modern server (discover, a tool call) and the legacy one (initialize, a tool call in its
 * session), prints one line {@code RESULT token=... session=... greeting=... instructions=...} and,
 * with {@code hold}, waits to be killed.
 *
 * <p>Arguments: the token endpoint, the modern MCP endpoint, the legacy server's base URL, the
 * user, and {@code hold} or {@code exit}.
 */
public final class ScenarioClient {
  private ScenarioClient() {}

  public static void main(String[] args) throws InterruptedException {
    URI tokenUri = URI.create(args[0]);
    URI modern = URI.create(args[1]);
    String legacyBase = args[2];
    String user = args[3];
    Client cluster = Client.fromEnv();
    OAuthSetup oauth = new OAuthSetup(cluster, tokenUri);
    AccessTokenSource tokens =
        new OAuth2AccessTokenSource(oauth.manager, oauth.service, OAuthSetup.REGISTRATION, user);
    ClientStateStore state = oauth.service.clientState(OAuthSetup.REGISTRATION, user);

    McpSyncClient client =
        McpClient.sync(
                HttpClientMcpTransport.builder(modern)
                    .requestCustomizer(new BearerTokenCustomizer(tokens))
                    .authorizationErrorHandler(new RefusedTokenHandler(tokens))
                    .build())
            .build();
    McpSchema.DiscoverResult server = new ClusterDiscovery(state).discover(client);
    McpSchema.CallToolResult greeting = client.tool("greet").arguments(Map.of("name", user)).call();

    io.modelcontextprotocol.client.McpSyncClient legacy =
        io.modelcontextprotocol.client.McpClient.sync(
                new ClusterSession(state, tokens)
                    .transport(
                        HttpClientStreamableHttpTransport.builder(legacyBase).endpoint("/legacy")))
            .requestTimeout(Duration.ofSeconds(30))
            .build();
    legacy.initialize();
    io.modelcontextprotocol.spec.McpSchema.CallToolResult session =
        legacy.callTool(
            io.modelcontextprotocol.spec.McpSchema.CallToolRequest.builder("session")
                .arguments(Map.of())
                .build());

    String token =
        oauth
            .service
            .loadAuthorizedClient(OAuthSetup.REGISTRATION, user)
            .getAccessToken()
            .getTokenValue();
    System.out.println(
        "RESULT token="
            + token
            + " session="
            + text(session.content().get(0))
            + " greeting="
            + ((McpSchema.TextContent) greeting.content().get(0)).text().replace(' ', '_')
            + " instructions="
            + server.instructions().replace(' ', '_')
            + " dir="
            + Path.of("").toAbsolutePath());
    System.out.flush();
    if (args.length > 4 && args[4].equals("hold")) {
      Thread.sleep(Long.MAX_VALUE); // until killed
    }
    System.exit(0);
  }

  private static String text(io.modelcontextprotocol.spec.McpSchema.Content c) {
    return ((io.modelcontextprotocol.spec.McpSchema.TextContent) c).text();
  }
}
