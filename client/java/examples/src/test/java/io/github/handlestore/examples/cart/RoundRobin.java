package io.github.handlestore.examples.cart;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An HTTP load balancer in front of cart replicas, as the cross-language test's (client/ts/test/
 * roundRobin.ts): tool calls go to the replicas in turn (call k to replica k mod n), every other
 * request in turn on a count of its own, so which replica serves a call does not depend on the
 * client's other requests. It keeps which replica served each tool call, and its HTTP status.
 */
final class RoundRobin implements AutoCloseable {
  /** A tool call the balancer forwarded. */
  record Hit(String replica, String tool, int status) {}

  private static final ObjectMapper JSON = new ObjectMapper();

  /** Headers the JDK's HTTP client sets itself. */
  private static final Set<String> OWN_HEADERS =
      Set.of("host", "connection", "content-length", "expect", "upgrade", "transfer-encoding");

  private final List<CartReplica> replicas;
  private final HttpServer server;
  private final ExecutorService threads = Executors.newFixedThreadPool(16);
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final AtomicInteger calls = new AtomicInteger();
  private final AtomicInteger others = new AtomicInteger();
  private final List<Hit> hits = new CopyOnWriteArrayList<>();

  RoundRobin(List<CartReplica> replicas) throws IOException {
    this.replicas = List.copyOf(replicas);
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    server.createContext("/", this::forward);
    server.setExecutor(threads);
    server.start();
  }

  /** The balancer's MCP endpoint. */
  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/mcp";
  }

  /** The tool calls forwarded so far. */
  List<Hit> hits() {
    return List.copyOf(hits);
  }

  private void forward(HttpExchange ex) throws IOException {
    try (ex) {
      byte[] body = ex.getRequestBody().readAllBytes();
      String tool = toolOf(body);
      int turn = tool != null ? calls.getAndIncrement() : others.getAndIncrement();
      CartReplica to = replicas.get(turn % replicas.size());
      HttpResponse<InputStream> answer = send(ex, body, to);
      if (tool != null) {
        hits.add(new Hit(to.name(), tool, answer.statusCode()));
      }
      answer
          .headers()
          .map()
          .forEach(
              (k, vs) -> {
                if (!OWN_HEADERS.contains(k.toLowerCase(Locale.ROOT)) && !k.startsWith(":")) {
                  ex.getResponseHeaders().put(k, vs);
                }
              });
      byte[] out;
      try (InputStream in = answer.body()) {
        out = in.readAllBytes();
      }
      ex.sendResponseHeaders(answer.statusCode(), out.length == 0 ? -1 : out.length);
      try (OutputStream os = ex.getResponseBody()) {
        os.write(out);
      }
    }
  }

  private HttpResponse<InputStream> send(HttpExchange ex, byte[] body, CartReplica to)
      throws IOException {
    HttpRequest.Builder req =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + to.port() + ex.getRequestURI()))
            .method(ex.getRequestMethod(), HttpRequest.BodyPublishers.ofByteArray(body));
    ex.getRequestHeaders()
        .forEach(
            (k, vs) -> {
              if (!OWN_HEADERS.contains(k.toLowerCase(Locale.ROOT))) {
                vs.forEach(v -> req.header(k, v));
              }
            });
    try {
      return http.send(req.build(), HttpResponse.BodyHandlers.ofInputStream());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  /** The tool of a {@code tools/call} request body; null for anything else. */
  private static String toolOf(byte[] body) {
    try {
      JsonNode msg = JSON.readTree(body);
      return msg != null && "tools/call".equals(msg.path("method").asText())
          ? msg.path("params").path("name").asText(null)
          : null;
    } catch (IOException e) {
      return null;
    }
  }

  @Override
  public void close() {
    server.stop(0);
    threads.shutdownNow();
  }
}
