package io.github.handlestore.mcp.replica;

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

/**
 * A test replica ({@link ReplicaMain}) in a child JVM of the test's classpath: a real process, so
 * that {@link #kill()} is a SIGKILL (no goodbye, as a crash) and {@link #restart()} a new process.
 * Its output goes to target/replicas/.
 */
public final class Replica implements AutoCloseable {
  private final String name;
  private final List<String> args;
  private final Path log;
  private Process process;
  private int port;

  private Replica(String name, List<String> args, Path log) {
    this.name = name;
    this.args = args;
    this.log = log;
  }

  /**
   * Starts replica {@code name} over {@code cluster}'s namespace {@code namespace}; {@code extra}
   * are more {@code --key value} arguments of {@link ReplicaMain}.
   */
  public static Replica start(Cluster cluster, String namespace, String name, String... extra) {
    List<String> a = new ArrayList<>();
    a.addAll(
        List.of(
            "--endpoints",
            String.join(",", cluster.endpoints()),
            "--namespace",
            namespace,
            "--name",
            name,
            "--base-dir",
            cluster.root().toString()));
    a.addAll(List.of(extra));
    Path dir = Path.of("target", "replicas");
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Replica r = new Replica(name, List.copyOf(a), dir.resolve(namespace + "-" + name + ".log"));
    r.spawn();
    return r;
  }

  /** The MCP endpoint. */
  public String url() {
    return "http://127.0.0.1:" + port + "/mcp";
  }

  /** SIGKILLs the replica and waits for it to be gone. */
  public void kill() {
    if (process != null) {
      process.destroyForcibly();
      try {
        process.waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      process = null;
    }
  }

  /** Kills the replica and starts it again (a new process, a new port). */
  public void restart() {
    kill();
    spawn();
  }

  @Override
  public void close() {
    kill();
  }

  private void spawn() {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(ReplicaMain.class.getName());
    cmd.addAll(args);
    try {
      Files.writeString(
          log,
          "--- start " + name + "\n",
          StandardCharsets.UTF_8,
          java.nio.file.StandardOpenOption.CREATE,
          java.nio.file.StandardOpenOption.APPEND);
      process =
          new ProcessBuilder(cmd)
              .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
              .start();
    } catch (IOException e) {
      throw new UncheckedIOException("starting replica " + name, e);
    }
    port = awaitReady(process);
  }

  /** The port the replica printed once it served; its log's tail if it never did. */
  private int awaitReady(Process p) {
    CompletableFuture<Integer> ready =
        CompletableFuture.supplyAsync(
            () -> {
              BufferedReader out =
                  new BufferedReader(
                      new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
              try {
                String line;
                while ((line = out.readLine()) != null) {
                  if (line.startsWith("READY ")) {
                    drain(out);
                    return Integer.parseInt(line.substring(6).trim());
                  }
                }
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
              throw new IllegalStateException("replica " + name + " exited before it served");
            });
    try {
      return ready.get(90, TimeUnit.SECONDS);
    } catch (Exception e) {
      p.destroyForcibly();
      throw new IllegalStateException(
          "replica " + name + " did not start: " + e + "\n" + tail(), e);
    }
  }

  /** Keeps reading the replica's stdout (so it never blocks on a full pipe). */
  private static void drain(BufferedReader out) {
    Thread t =
        new Thread(
            () -> {
              try {
                while (out.readLine() != null) {
                  // discarded: the replica logs to stderr
                }
              } catch (IOException e) {
                // the replica is gone
              }
            });
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
