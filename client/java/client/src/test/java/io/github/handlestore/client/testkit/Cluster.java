package io.github.handlestore.client.testkit;

import static org.junit.jupiter.api.Assertions.fail;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.ClientConfig;
import io.github.handlestore.client.Tls;
import io.github.handlestore.proto.v1.AdminGrpc;
import io.github.handlestore.proto.v1.StatusRequest;
import io.github.handlestore.proto.v1.StatusResponse;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * A running cluster of the built binary on free loopback ports, each node with its own data
 * directory, started as the Go client's testkit starts one (client/go/internal/testkit/cluster.go:
 * the same flags); closed (its nodes stopped and files removed) by {@link #close()}. Without a
 * binary, {@link #start} skips the test saying why, or fails it where the binary is required.
 */
public final class Cluster implements AutoCloseable {
  private static final Set<Integer> USED_PORTS = new HashSet<>();
  private static final java.util.concurrent.atomic.AtomicBoolean SAID_WHY =
      new java.util.concurrent.atomic.AtomicBoolean();

  private final Path bin;
  private final Path root;
  private final List<Node> nodes = new ArrayList<>();
  private final List<String> extra;
  private Path certs;

  private Cluster(Path bin, Path root, List<String> extra) {
    this.bin = bin;
    this.root = root;
    this.extra = extra;
  }

  /** Starts {@code size} nodes (with TLS if asked) and waits for their leader. */
  public static Cluster start(int size, boolean tls, String... extraFlags) {
    String why = Binary.skipReason();
    if (!why.isEmpty()) {
      if (Binary.required()) {
        fail(
            "the Java client's cluster tests: "
                + why
                + " (HANDLESTORE_REQUIRE_BIN=1: the test command built it)");
      }
      if (SAID_WHY.compareAndSet(false, true)) {
        System.out.println("SKIPPED: the Java client's cluster tests: " + why);
      }
      Assumptions.abort("SKIPPED: " + why);
    }
    try {
      Binary.counted();
      Cluster c =
          new Cluster(
              Binary.bin(), Files.createTempDirectory("handlestore-java-"), List.of(extraFlags));
      for (int id = 1; id <= size; id++) {
        String peer = tls ? "127.0.0.1:" + freePort() : null;
        c.nodes.add(new Node(id, "127.0.0.1:" + freePort(), peer, c.root.resolve("node-" + id)));
      }
      if (tls) {
        c.makeCerts();
      }
      for (Node n : c.nodes) {
        c.spawn(n.id);
      }
      c.waitLeader(Duration.ofSeconds(30));
      return c;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A free loopback port, never the same one twice in a run. */
  static synchronized int freePort() throws IOException {
    while (true) {
      try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
        if (USED_PORTS.add(s.getLocalPort())) {
          return s.getLocalPort();
        }
      }
    }
  }

  private void makeCerts() throws IOException {
    certs = root.resolve("certs");
    List<String> args =
        new ArrayList<>(
            List.of(bin.toString(), "certs", "--dir", certs.toString(), "--client", "root"));
    for (Node n : nodes) {
      args.add("--node");
      args.add(n.id + "=localhost,127.0.0.1");
    }
    run(args);
  }

  /** Runs the binary's {@code args} (a subcommand), failing the test if it fails. */
  public void run(List<String> args) throws IOException {
    Process p = new ProcessBuilder(args).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      if (p.waitFor() != 0) {
        fail(String.join(" ", args) + ": " + out);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  /** The binary. */
  public Path bin() {
    return bin;
  }

  /** The cluster's temporary directory. */
  public Path root() {
    return root;
  }

  /** The member with this id. */
  public Node node(int id) {
    return nodes.get(id - 1);
  }

  /** The members' client addresses. */
  public List<String> endpoints() {
    return nodes.stream().map(n -> n.addr).toList();
  }

  /** The client TLS of a cluster with TLS (the CA; null without TLS). */
  public Tls tls() {
    return certs == null ? null : Tls.fromFiles(certs.resolve("ca.pem"), null, null);
  }

  /** A config of this cluster (its endpoints and TLS) to shape further. */
  public ClientConfig.Builder config(String namespace) {
    return ClientConfig.builder().endpoints(endpoints()).namespace(namespace).tls(tls());
  }

  /** A client of this cluster in {@code namespace}, shaped by {@code shape}. */
  public Client client(String namespace, Consumer<ClientConfig.Builder> shape) {
    ClientConfig.Builder b = config(namespace);
    shape.accept(b);
    return new Client(b.build());
  }

  private List<String> nodeArgs(Node n) {
    List<String> initial = new ArrayList<>();
    for (Node m : nodes) {
      initial.add(m.id + "=" + m.addr + (m.peerAddr != null ? "/" + m.peerAddr : ""));
    }
    List<String> args =
        new ArrayList<>(
            List.of(
                bin.toString(),
                "node",
                "--id",
                String.valueOf(n.id),
                "--listen",
                n.addr,
                "--data",
                n.data.toString(),
                "--initial-cluster",
                String.join(",", initial),
                "--heartbeat",
                "100ms",
                "--election-timeout",
                "700ms",
                "--sweep-interval",
                "100ms"));
    if (certs != null) {
      String cert = certs.resolve("node-" + n.id + ".pem").toString();
      String key = certs.resolve("node-" + n.id + "-key.pem").toString();
      args.addAll(
          List.of(
              "--tls-cert",
              cert,
              "--tls-key",
              key,
              "--peer-tls-cert",
              cert,
              "--peer-tls-key",
              key,
              "--peer-tls-ca",
              certs.resolve("ca.pem").toString(),
              "--peer-listen",
              n.peerAddr));
    }
    args.addAll(extra);
    return args;
  }

  /** Starts node {@code id} (again). */
  public void spawn(int id) {
    Node n = node(id);
    try {
      Files.createDirectories(n.data);
      n.process =
          new ProcessBuilder(nodeArgs(n))
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(n.log.toFile()))
              .start();
    } catch (IOException e) {
      throw new UncheckedIOException("starting node " + id, e);
    }
  }

  /** SIGKILLs node {@code id}: no goodbye, as a crash. */
  public void kill(int id) {
    Node n = node(id);
    if (n.process != null) {
      n.process.destroyForcibly();
      waitExit(n.process, Duration.ofSeconds(30));
      n.process = null;
    }
  }

  /** Whether node {@code id} runs. */
  public boolean running(int id) {
    return node(id).process != null;
  }

  private static void waitExit(Process p, Duration d) {
    try {
      p.waitFor(d.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Node {@code id}'s status, asked of it alone. */
  public StatusResponse status(int id) {
    ChannelCredentials creds = InsecureChannelCredentials.create();
    try {
      if (certs != null) {
        creds =
            TlsChannelCredentials.newBuilder()
                .trustManager(certs.resolve("ca.pem").toFile())
                .build();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ManagedChannel ch = Grpc.newChannelBuilder(node(id).addr, creds).build();
    try {
      return AdminGrpc.newBlockingStub(ch)
          .withDeadlineAfter(1, TimeUnit.SECONDS)
          .status(StatusRequest.getDefaultInstance());
    } finally {
      ch.shutdownNow();
    }
  }

  /** The leader's id, once every running node agrees on it. */
  public int waitLeader(Duration timeout) {
    long end = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < end) {
      int leader = agreedLeader();
      if (leader > 0) {
        return leader;
      }
      sleep(Duration.ofMillis(100));
    }
    fail("no leader within " + timeout + "\n" + logs(40));
    return 0;
  }

  private int agreedLeader() {
    long leader = 0;
    try {
      for (Node n : nodes) {
        if (n.process == null) {
          continue;
        }
        StatusResponse s = status(n.id);
        if (s.getLeaderId() == 0 || (leader != 0 && s.getLeaderId() != leader)) {
          return 0;
        }
        leader = s.getLeaderId();
      }
      if (leader == 0 || !status((int) leader).getState().equals("leader")) {
        return 0;
      }
      return (int) leader;
    } catch (RuntimeException e) {
      return 0;
    }
  }

  /** The last lines of every node's log. */
  public String logs(int lines) {
    StringBuilder b = new StringBuilder();
    for (Node n : nodes) {
      List<String> all;
      try {
        all = Files.readAllLines(n.log, StandardCharsets.UTF_8);
      } catch (IOException e) {
        all = List.of("(no log: " + e.getMessage() + ")");
      }
      b.append("---- node ").append(n.id).append(" ----\n");
      all.subList(Math.max(0, all.size() - lines), all.size())
          .forEach(l -> b.append(l).append('\n'));
    }
    return b.toString();
  }

  /** Sleeps, as tests need between steps. */
  public static void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Ends every node (SIGTERM, then SIGKILL after 10 s) and removes the files. */
  @Override
  public void close() {
    for (Node n : nodes) {
      if (n.process != null) {
        n.process.destroy();
      }
    }
    for (Node n : nodes) {
      if (n.process != null) {
        waitExit(n.process, Duration.ofSeconds(10));
        if (n.process.isAlive()) {
          n.process.destroyForcibly();
          waitExit(n.process, Duration.ofSeconds(10));
        }
        n.process = null;
      }
    }
    try (Stream<Path> files = Files.walk(root)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // Left for the OS's temporary-file cleanup.
    }
  }
}
