package io.github.handlestore.mcp.replica;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.ClientConfig;
import io.github.handlestore.mcp.ClusterChangeFeed;
import io.github.handlestore.mcp.ClusterRequestStateCodec;
import io.github.handlestore.mcp.tasks.ClusterTaskStore;
import io.github.handlestore.mcp.tasks.TasksFeature;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.modern.McpSchema;
import io.modelcontextprotocol.modern.server.McpServer;
import io.modelcontextprotocol.modern.server.feature.ResourcesFeature;
import io.modelcontextprotocol.modern.server.feature.ToolsFeature;
import io.modelcontextprotocol.modern.server.transport.HttpServletMcpTransport;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.catalina.Context;
import org.apache.catalina.Wrapper;
import org.apache.catalina.startup.Tomcat;

/**
 * One replica of a stateless modern MCP server, as a test starts it in a child JVM ({@link
 * Replica}): mcp-core 2.2.0's {@code McpServer} with the module's three seams, served by {@code
 * HttpServletMcpTransport} in an embedded Tomcat (how the SDK's own tests serve it, without
 * Spring), on a loopback port. Prints "READY port" once it serves.
 *
 * <p>Arguments, {@code --name value}: endpoints (comma-separated), namespace, name, single-use
 * (true/false), refresh-ms (the ring's refresh interval), call-timeout-ms (the client's).
 */
public final class ReplicaMain {
  private ReplicaMain() {}

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = parse(argv);
    ClientConfig.Builder config =
        ClientConfig.builder()
            .endpoints(List.of(args.get("endpoints").split(",")))
            .namespace(args.get("namespace"));
    if (args.containsKey("call-timeout-ms")) {
      config.callTimeout(Duration.ofMillis(Long.parseLong(args.get("call-timeout-ms"))));
    }
    Client client = new Client(config.build());
    ClusterRequestStateCodec codec =
        ClusterRequestStateCodec.builder(client)
            .singleUse(Boolean.parseBoolean(args.getOrDefault("single-use", "false")))
            .refreshEvery(
                Duration.ofMillis(Long.parseLong(args.getOrDefault("refresh-ms", "10000"))))
            .principal(ctx -> String.valueOf(ctx.transportContext().get("user")))
            .build()
            .join();
    // Opened before the server takes requests: no listen is acknowledged before the watches stand.
    ClusterChangeFeed feed = ClusterChangeFeed.builder(client).open().join();
    // --sdk-feed true: the SDK's in-process feed instead (what the cluster's feed adds shows).
    boolean sdkFeed = Boolean.parseBoolean(args.getOrDefault("sdk-feed", "false"));
    io.modelcontextprotocol.modern.server.feature.McpChangeFeed local =
        new io.modelcontextprotocol.modern.server.feature.McpChangeFeed();
    ClusterTaskStore tasks = ClusterTaskStore.of(client);
    String name = args.getOrDefault("name", "replica");

    McpServer server =
        McpServer.builder()
            .serverInfo(McpSchema.Implementation.builder("handlestore-test-" + name, "1").build())
            .requestStateCodec(codec)
            .subscriptions(sdkFeed ? local : feed)
            .feature(
                ToolsFeature.ofSync(new ReplicaTools(name, feed, sdkFeed ? local : feed, tasks)))
            .feature(ResourcesFeature.ofSync(new ReplicaResources()))
            .feature(new TasksFeature(tasks))
            .build();
    // No keep-alive frames: mcp-core 2.2.0's servlet transport, writing to a listen stream whose
    // client has gone, can break another connection of the same Tomcat (seen with the SDK's own
    // McpChangeFeed too); the tests never write to a stream they closed, keep-alives would.
    HttpServletMcpTransport transport =
        HttpServletMcpTransport.builder(server)
            .keepAliveInterval(null)
            .contextExtractor(
                request -> {
                  String user = request.getHeader("X-User");
                  return McpTransportContext.create(Map.of("user", user == null ? "" : user));
                })
            .build();

    Tomcat tomcat = new Tomcat();
    tomcat.setPort(Integer.parseInt(args.getOrDefault("port", "0")));
    tomcat.setBaseDir(args.getOrDefault("base-dir", System.getProperty("java.io.tmpdir")));
    Context context = tomcat.addContext("", null);
    Wrapper wrapper = Tomcat.addServlet(context, "mcp", transport);
    wrapper.setAsyncSupported(true);
    wrapper.addMapping("/*");
    tomcat.getConnector().setProperty("address", "127.0.0.1");
    tomcat.start();
    System.out.println("READY " + tomcat.getConnector().getLocalPort());
    System.out.flush();
    tomcat.getServer().await();
  }

  private static Map<String, String> parse(String[] argv) {
    Map<String, String> out = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) {
      out.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
    }
    return out;
  }
}
