package io.github.handlestore.client.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the handlestore binary and the repository are, and what the test command asks of the
 * cluster tests: the same rules as the Go client's testkit (client/go/internal/testkit/paths.go).
 */
public final class Binary {
  private Binary() {}

  /** The repository's root (the build passes it as {@code handlestore.repo}). */
  public static Path repo() {
    String p = System.getProperty("handlestore.repo");
    return p != null
        ? Path.of(p).toAbsolutePath().normalize()
        : Path.of("../../..").toAbsolutePath().normalize();
  }

  /**
   * The binary: $HANDLESTORE_BIN, else a release build under $CARGO_TARGET_DIR, the repository's
   * target/ or ~/.cache/handlestore/target.
   */
  public static Path bin() {
    String env = System.getenv("HANDLESTORE_BIN");
    if (env != null && !env.isEmpty()) {
      return Path.of(env);
    }
    List<Path> found = new ArrayList<>();
    String cargo = System.getenv("CARGO_TARGET_DIR");
    if (cargo != null && !cargo.isEmpty()) {
      found.add(Path.of(cargo, "release", "handlestore"));
    }
    found.add(repo().resolve("target/release/handlestore"));
    found.add(
        Path.of(System.getProperty("user.home"), ".cache/handlestore/target/release/handlestore"));
    return found.stream()
        .filter(Files::isExecutable)
        .findFirst()
        .orElse(found.get(found.size() - 1));
  }

  /**
   * The test command built the binary just before the tests ($HANDLESTORE_REQUIRE_BIN=1): a missing
   * binary then fails the cluster tests instead of skipping them.
   */
  public static boolean required() {
    return "1".equals(System.getenv("HANDLESTORE_REQUIRE_BIN"));
  }

  /** Why the cluster tests cannot run here ("" if they can). */
  public static String skipReason() {
    if (Files.isExecutable(bin())) {
      return "";
    }
    return "no handlestore binary at "
        + bin()
        + ": run `cargo build --release` or set HANDLESTORE_BIN";
  }

  /**
   * Notes a cluster a test started, as a line "java" in the file $HANDLESTORE_CLUSTER_RUNS names
   * (if any): tests/clusters-ran.sh counts them, so a tier whose cluster tests all skipped cannot
   * pass unseen.
   */
  static void counted() throws IOException {
    String path = System.getenv("HANDLESTORE_CLUSTER_RUNS");
    if (path == null || path.isEmpty()) {
      return;
    }
    Files.writeString(
        Path.of(path),
        "java\n",
        StandardCharsets.UTF_8,
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
