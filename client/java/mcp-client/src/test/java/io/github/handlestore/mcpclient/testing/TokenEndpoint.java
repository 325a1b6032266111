package io.github.handlestore.mcpclient.testing;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small OAuth 2.0 token endpoint on loopback (RFC 6749 section 4.4, client credentials, with the
 * client's id and secret in HTTP Basic or in the form): it issues {@code tok-1}, {@code tok-2}, ...
 * and counts the requests it gets, so a test can tell a reused token from a new sign-in.
 */
public final class TokenEndpoint implements AutoCloseable {
  private final HttpServer server;
  private final String clientId;
  private final String clientSecret;
  private final long expiresIn;
  private final AtomicInteger requests = new AtomicInteger();
  private final AtomicInteger issued = new AtomicInteger();
  private final Set<String> valid = ConcurrentHashMap.newKeySet();

  private TokenEndpoint(String clientId, String clientSecret, long expiresIn) throws IOException {
    this.clientId = clientId;
    this.clientSecret = clientSecret;
    this.expiresIn = expiresIn;
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/token", this::token);
    server.start();
  }

  /** An endpoint for the client {@code clientId}, whose tokens live {@code expiresIn} seconds. */
  public static TokenEndpoint start(String clientId, String clientSecret, long expiresIn) {
    try {
      return new TokenEndpoint(clientId, clientSecret, expiresIn);
    } catch (IOException e) {
      throw new IllegalStateException("cannot start the token endpoint", e);
    }
  }

  /** Where tokens are asked for. */
  public URI uri() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/token");
  }

  /** How many token requests came in (good or not). */
  public int requests() {
    return requests.get();
  }

  /** Whether {@code token} was issued here and not revoked. */
  public boolean valid(String token) {
    return valid.contains(token);
  }

  /** Issues a token without a request (what an application's earlier sign-in got). */
  public String issue() {
    String token = "tok-" + issued.incrementAndGet() + "-" + Long.toHexString(System.nanoTime());
    valid.add(token);
    return token;
  }

  /** The server no longer takes {@code token}. */
  public void revoke(String token) {
    valid.remove(token);
  }

  private void token(HttpExchange exchange) throws IOException {
    try (exchange) {
      requests.incrementAndGet();
      Map<String, String> form = form(exchange.getRequestBody());
      if (!"POST".equals(exchange.getRequestMethod())
          || !"client_credentials".equals(form.get("grant_type"))) {
        reply(exchange, 400, "{\"error\":\"unsupported_grant_type\"}");
        return;
      }
      if (!authenticated(exchange, form)) {
        reply(exchange, 401, "{\"error\":\"invalid_client\"}");
        return;
      }
      String token = issue();
      reply(
          exchange,
          200,
          "{\"access_token\":\""
              + token
              + "\",\"token_type\":\"Bearer\",\"expires_in\":"
              + expiresIn
              + ",\"scope\":\"mcp\"}");
    }
  }

  private boolean authenticated(HttpExchange exchange, Map<String, String> form) {
    String basic = exchange.getRequestHeaders().getFirst("Authorization");
    if (basic != null && basic.startsWith("Basic ")) {
      String pair =
          new String(Base64.getDecoder().decode(basic.substring(6)), StandardCharsets.UTF_8);
      return pair.equals(encode(clientId) + ":" + encode(clientSecret));
    }
    return clientId.equals(form.get("client_id")) && clientSecret.equals(form.get("client_secret"));
  }

  private static String encode(String s) {
    return java.net.URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  private static Map<String, String> form(InputStream body) throws IOException {
    Map<String, String> out = new HashMap<>();
    String text = new String(body.readAllBytes(), StandardCharsets.UTF_8);
    for (String pair : text.split("&")) {
      int eq = pair.indexOf('=');
      if (eq > 0) {
        out.put(
            URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
            URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
      }
    }
    return out;
  }

  private static void reply(HttpExchange exchange, int status, String json) throws IOException {
    byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/json;charset=UTF-8");
    exchange.getResponseHeaders().set("Cache-Control", "no-store");
    exchange.sendResponseHeaders(status, bytes.length);
    exchange.getResponseBody().write(bytes);
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
