package io.github.handlestore.mcpclient.testing;

import io.modelcontextprotocol.modern.McpHttp;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.Wrapper;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;

/**
 * The MCP SDK's own HTTP servers in an embedded Tomcat on loopback, behind a filter that takes only
 * a bearer token its {@code valid} predicate accepts (401 otherwise): the modern server ({@code
 * mcp-core} 2.2.0's {@code HttpServletMcpTransport}, protocol 2026-07-28) at {@code /mcp} and the
 * legacy Streamable HTTP one, with sessions, at {@code /legacy}. It counts what came through: the
 * modern requests by their {@code Mcp-Method} header, the legacy sessions opened ({@code
 * initialize}: a POST without a session id), and the refusals.
 */
public final class McpTestServers implements AutoCloseable {
  /** The counter of legacy {@code initialize} requests. */
  public static final String LEGACY_INITIALIZE = "legacy:initialize";

  /** The counter of requests refused for their token. */
  public static final String REFUSED = "refused";

  private final Tomcat tomcat;
  private final Connector connector;
  private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();

  private McpTestServers(Predicate<String> valid) throws IOException, LifecycleException {
    Logger.getLogger("org.apache").setLevel(Level.WARNING);
    tomcat = new Tomcat();
    tomcat.setBaseDir(Files.createTempDirectory("mcp-tomcat").toString());
    connector = new Connector();
    connector.setPort(0);
    connector.setProperty("address", "127.0.0.1");
    tomcat.setConnector(connector);
    Context ctx = tomcat.addContext("", null);
    servlet(ctx, "modern", "/mcp", ModernTestServer.servlet());
    servlet(ctx, "legacy", "/legacy", LegacyTestServer.servlet("/legacy"));
    FilterDef auth = new FilterDef();
    auth.setFilterName("bearer");
    auth.setFilter(new BearerFilter(valid));
    auth.setAsyncSupported("true");
    ctx.addFilterDef(auth);
    FilterMap all = new FilterMap();
    all.setFilterName("bearer");
    all.addURLPattern("/*");
    ctx.addFilterMap(all);
    tomcat.start();
  }

  /** Starts the servers, taking the bearer tokens {@code valid} accepts. */
  public static McpTestServers start(Predicate<String> valid) {
    try {
      return new McpTestServers(valid);
    } catch (IOException | LifecycleException e) {
      throw new IllegalStateException("cannot start the MCP test servers", e);
    }
  }

  private static void servlet(Context ctx, String name, String path, HttpServlet servlet) {
    Wrapper w = Tomcat.addServlet(ctx, name, servlet);
    w.setAsyncSupported(true);
    ctx.addServletMapping(path, name);
  }

  /** The modern server's endpoint. */
  public URI modern() {
    return URI.create(base() + "/mcp");
  }

  /** The legacy server's base URL (its endpoint is {@code /legacy} on it). */
  public String legacyBase() {
    return base();
  }

  private String base() {
    return "http://127.0.0.1:" + connector.getLocalPort();
  }

  /** How many of {@code what} came in: a modern method, or one of the constants here. */
  public int count(String what) {
    AtomicInteger n = counts.get(what);
    return n == null ? 0 : n.get();
  }

  private void counted(String what) {
    counts.computeIfAbsent(what, k -> new AtomicInteger()).incrementAndGet();
  }

  /** Lets through what carries a valid bearer token, counting it; 401 otherwise. */
  private final class BearerFilter implements Filter {
    private final Predicate<String> valid;

    BearerFilter(Predicate<String> valid) {
      this.valid = valid;
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse resp, FilterChain chain)
        throws IOException, ServletException {
      HttpServletRequest request = (HttpServletRequest) req;
      String auth = request.getHeader("Authorization");
      if (auth == null || !auth.startsWith("Bearer ") || !valid.test(auth.substring(7))) {
        counted(REFUSED);
        HttpServletResponse response = (HttpServletResponse) resp;
        response.setHeader("WWW-Authenticate", "Bearer error=\"invalid_token\"");
        response.sendError(401);
        return;
      }
      String method = request.getHeader(McpHttp.Headers.MCP_METHOD);
      if (method != null) {
        counted(method);
      } else if ("POST".equals(request.getMethod())
          && request.getRequestURI().equals("/legacy")
          && request.getHeader("Mcp-Session-Id") == null) {
        counted(LEGACY_INITIALIZE);
      }
      chain.doFilter(req, resp);
    }
  }

  @Override
  public void close() {
    try {
      tomcat.stop();
      tomcat.destroy();
    } catch (LifecycleException e) {
      throw new IllegalStateException(e);
    }
  }
}
