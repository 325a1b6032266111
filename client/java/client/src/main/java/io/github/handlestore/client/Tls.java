package io.github.handlestore.client;

import io.github.handlestore.client.errors.HandlestoreException;
import io.grpc.ChannelCredentials;
import io.grpc.TlsChannelCredentials;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * TLS to the nodes: the cluster's CA, and a client certificate with its key where the nodes require
 * one (all PEM; the key in PKCS#8, as {@code handlestore certs} writes it).
 *
 * @param ca the CA certificate(s) the nodes' certificates are checked against
 * @param cert the client certificate chain (null: none)
 * @param key the client certificate's private key (null: none)
 */
public record Tls(byte[] ca, byte[] cert, byte[] key) {
  /** TLS settings; a certificate needs its key and a key its certificate. */
  public Tls {
    if (ca == null || ca.length == 0) {
      throw HandlestoreException.invalid("TLS needs the cluster's CA");
    }
    if ((cert == null) != (key == null)) {
      throw HandlestoreException.invalid(
          "a client certificate needs its key, and a key its certificate");
    }
    ca = ca.clone();
    cert = cert == null ? null : cert.clone();
    key = key == null ? null : key.clone();
  }

  /** The CA alone (no client certificate). */
  public static Tls ofCa(byte[] ca) {
    return new Tls(ca, null, null);
  }

  /**
   * Reads the CA, and a client certificate and its key (both or neither: null for none).
   *
   * @throws UncheckedIOException if a file cannot be read
   */
  public static Tls fromFiles(Path ca, Path cert, Path key) {
    if ((cert == null) != (key == null)) {
      throw HandlestoreException.invalid(
          "a client certificate needs its key, and a key its certificate");
    }
    return new Tls(read(ca), cert == null ? null : read(cert), key == null ? null : read(key));
  }

  private static byte[] read(Path p) {
    try {
      return Files.readAllBytes(p);
    } catch (IOException e) {
      throw new UncheckedIOException(p + ": " + e.getMessage(), e);
    }
  }

  /** The gRPC credentials of these settings. */
  ChannelCredentials credentials() {
    try {
      TlsChannelCredentials.Builder b =
          TlsChannelCredentials.newBuilder().trustManager(new ByteArrayInputStream(ca));
      if (cert != null) {
        b.keyManager(new ByteArrayInputStream(cert), new ByteArrayInputStream(key));
      }
      return b.build();
    } catch (IOException | IllegalArgumentException e) {
      throw HandlestoreException.invalid("TLS: the CA, certificate or key: " + e.getMessage());
    }
  }
}
