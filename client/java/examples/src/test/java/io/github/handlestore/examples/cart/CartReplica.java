package io.github.handlestore.examples.cart;

import io.github.handlestore.client.testkit.Cluster;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A replica of the cart server as a deployment runs it: {@link CartServer#main} in a child JVM (of
 * the test's classpath), started with its command line, ready once it prints {@code listening
 * <port>}. Its log goes to target/replicas/.
 */
final class CartReplica implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("^listening (\\d+)$");

  private final String name;
  private final Process process;
  private final Path log;
  private final int port;

  private CartReplica(String name, Process process, Path log) {
    this.name = name;
    this.process = process;
    this.log = log;
    this.port = awaitListening();
  }

  /** Starts replica {@code name} over {@code cluster}'s namespace {@code namespace}. */
  static CartReplica start(Cluster cluster, String namespace, String name) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xmx256m", "-XX:TieredStopAtLevel=1"));
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), CartServer.class.getName()));
    cmd.addAll(List.of("--listen", "127.0.0.1:0"));
    cmd.addAll(List.of("--endpoints", String.join(",", cluster.endpoints())));
    cmd.addAll(List.of("--namespace", namespace));
    try {
      Path dir = Files.createDirectories(Path.of("target", "replicas"));
      Path log = dir.resolve(namespace + "-" + name + ".log");
      Process p =
          new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.to(log.toFile())).start();
      return new CartReplica(name, p, log);
    } catch (IOException e) {
      throw new UncheckedIOException("starting replica " + name, e);
    }
  }

  /** The replica's MCP endpoint. */
  String url() {
    return "http://127.0.0.1:" + port + "/mcp";
  }

  int port() {
    return port;
  }

  String name() {
    return name;
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(20, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The port of the replica's {@code listening} line; its log's tail if it never printed one. */
  private int awaitListening() {
    CompletableFuture<Integer> ready = CompletableFuture.supplyAsync(this::readListening);
    try {
      return ready.get(90, TimeUnit.SECONDS);
    } catch (Exception e) {
      process.destroyForcibly();
      throw new IllegalStateException(
          "replica " + name + " did not start: " + e + "\n" + tail(), e);
    }
  }

  private int readListening() {
    BufferedReader out =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    try {
      for (String line; (line = out.readLine()) != null; ) {
        Matcher m = LISTENING.matcher(line);
        if (m.matches()) {
          drain(out);
          return Integer.parseInt(m.group(1));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    throw new IllegalStateException("replica " + name + " exited before it served");
  }

  /** Keeps reading the replica's stdout, so that it never blocks on a full pipe. */
  private static void drain(BufferedReader out) {
    Thread t =
        new Thread(
            () -> {
              try {
                while (out.readLine() != null) {
                  // nothing more is expected on stdout
                }
              } catch (IOException e) {
                // the replica is gone
              }
            },
            "replica-stdout");
    t.setDaemon(true);
    t.start();
  }

  private String tail() {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }
}
