package io.github.handlestore.examples.cart;

import jakarta.servlet.http.HttpServlet;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.Wrapper;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;

/**
 * An embedded Tomcat serving one servlet at {@code /mcp} (every other path is 404): how the SDK's
 * servlet transports run without Spring. Its scratch directory is removed when it stops.
 */
final class CartHttpServer implements AutoCloseable {
  /** The MCP endpoint's path. */
  static final String ENDPOINT = "/mcp";

  private final Tomcat tomcat;
  private final Connector connector;
  private final Path baseDir;

  private CartHttpServer(Tomcat tomcat, Connector connector, Path baseDir) {
    this.tomcat = tomcat;
    this.connector = connector;
    this.baseDir = baseDir;
  }

  /** Serves {@code servlet} on {@code host:port} (port 0: any free one). */
  static CartHttpServer start(String host, int port, HttpServlet servlet) {
    Logger.getLogger("org.apache").setLevel(Level.WARNING);
    try {
      Path baseDir = Files.createTempDirectory("handlestore-cart-tomcat");
      Tomcat tomcat = new Tomcat();
      tomcat.setBaseDir(baseDir.toString());
      Connector connector = new Connector();
      connector.setPort(port);
      connector.setProperty("address", host);
      tomcat.setConnector(connector);
      Context ctx = tomcat.addContext("", null);
      Wrapper wrapper = Tomcat.addServlet(ctx, "mcp", servlet);
      wrapper.setAsyncSupported(true);
      ctx.addServletMapping(ENDPOINT, "mcp");
      tomcat.start();
      if (connector.getLocalPort() <= 0) {
        tomcat.stop();
        tomcat.destroy();
        throw new IllegalStateException("cannot listen on " + host + ":" + port);
      }
      return new CartHttpServer(tomcat, connector, baseDir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (LifecycleException e) {
      throw new IllegalStateException("cannot start the HTTP server", e);
    }
  }

  /** The port it listens on. */
  int port() {
    return connector.getLocalPort();
  }

  /** Serves until the process is stopped. */
  void await() {
    tomcat.getServer().await();
  }

  @Override
  public void close() {
    try {
      tomcat.stop();
      tomcat.destroy();
    } catch (LifecycleException e) {
      throw new IllegalStateException(e);
    } finally {
      removeTree(baseDir);
    }
  }

  private static void removeTree(Path dir) {
    try (Stream<Path> all = Files.walk(dir)) {
      all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a scratch directory left in /tmp
    }
  }
}
