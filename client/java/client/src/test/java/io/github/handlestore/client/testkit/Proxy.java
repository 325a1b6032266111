package io.github.handlestore.client.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP forwarder on loopback in front of one node, whose connections a test cuts ({@link #cut()}):
 * what a client sees when the network drops its connection mid-call while the node lives on. New
 * connections are forwarded as before.
 */
public final class Proxy implements AutoCloseable {
  private final ServerSocket server;
  private final String target;
  private final List<Socket> open = new ArrayList<>();
  private final AtomicInteger cuts = new AtomicInteger();

  private Proxy(ServerSocket server, String target) {
    this.server = server;
    this.target = target;
  }

  /** A proxy to {@code target} ("127.0.0.1:port") on a free loopback port. */
  public static Proxy to(String target) {
    try {
      ServerSocket s = new ServerSocket(Cluster.freePort(), 50, InetAddress.getLoopbackAddress());
      Proxy p = new Proxy(s, target);
      Thread t = new Thread(p::accept, "proxy-" + target);
      t.setDaemon(true);
      t.start();
      return p;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The proxy's address, "127.0.0.1:port". */
  public String addr() {
    return "127.0.0.1:" + server.getLocalPort();
  }

  /** How many connections {@link #cut()} dropped so far. */
  public int cuts() {
    return cuts.get();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket in = server.accept();
        int colon = target.lastIndexOf(':');
        Socket out =
            new Socket(target.substring(0, colon), Integer.parseInt(target.substring(colon + 1)));
        synchronized (open) {
          open.add(in);
          open.add(out);
        }
        pipe(in, out);
        pipe(out, in);
      } catch (IOException e) {
        // Closed, or the node is down: the client sees a failed connection.
      }
    }
  }

  private static void pipe(Socket from, Socket to) {
    Thread t =
        new Thread(
            () -> {
              byte[] buf = new byte[64 << 10];
              try (InputStream in = from.getInputStream();
                  OutputStream out = to.getOutputStream()) {
                for (int n; (n = in.read(buf)) >= 0; ) {
                  out.write(buf, 0, n);
                }
              } catch (IOException e) {
                // Cut, or closed by the other side.
              } finally {
                closeQuietly(from);
                closeQuietly(to);
              }
            },
            "proxy-pipe");
    t.setDaemon(true);
    t.start();
  }

  /** Drops every connection open now, with a reset (no goodbye, as a network failure). */
  public void cut() {
    List<Socket> now;
    synchronized (open) {
      now = new ArrayList<>(open);
      open.clear();
    }
    for (Socket s : now) {
      try {
        s.setSoLinger(true, 0);
      } catch (IOException e) {
        // Already closed.
      }
      if (!s.isClosed()) {
        cuts.incrementAndGet();
      }
      closeQuietly(s);
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // Nothing to do.
    }
  }

  @Override
  public void close() {
    try {
      server.close();
    } catch (IOException e) {
      // Nothing to do.
    }
    cut();
  }
}
