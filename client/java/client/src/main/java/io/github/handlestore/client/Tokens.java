package io.github.handlestore.client;

import io.github.handlestore.client.errors.HandlestoreException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Tokens kept in files. */
public final class Tokens {
  private Tokens() {}

  /**
   * A token kept in a file (a container secret): its first line, trimmed.
   *
   * @throws UncheckedIOException if the file cannot be read
   */
  public static String readTokenFile(Path path) {
    String raw;
    try {
      raw = Files.readString(path, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(path + ": " + e.getMessage(), e);
    }
    String first = raw.strip().split("\\R", 2)[0].strip();
    if (first.isEmpty()) {
      throw HandlestoreException.invalid(path + ": the token file is empty");
    }
    return first;
  }
}
