package io.github.handlestore.client;

import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.client.internal.Wire;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a {@link Client} is made from; only the endpoints are required. Made by {@link #builder()}
 * or {@link #fromEnv()}, checked when the client is built.
 */
public final class ClientConfig {
  /** The namespace of a config that names none. */
  public static final String DEFAULT_NAMESPACE = "default";

  final List<String> endpoints;
  final String namespace;
  final Tls tls;
  final String token;
  final Duration callTimeout;
  final Duration attemptTimeout;
  final Backoff backoff;
  final int maxWriteCalls;
  final int maxReadCalls;

  private ClientConfig(Builder b) {
    this.endpoints = List.copyOf(b.endpoints);
    this.namespace = b.namespace;
    this.tls = b.tls;
    this.token = b.token;
    this.callTimeout = b.callTimeout;
    this.attemptTimeout = b.attemptTimeout;
    this.backoff = b.backoff;
    this.maxWriteCalls = b.maxWriteCalls;
    this.maxReadCalls = b.maxReadCalls;
  }

  /** An empty builder. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A builder holding what the environment gives, with the names the {@code handlestore} CLI and
   * the other clients read: HANDLESTORE_ENDPOINTS (comma-separated), HANDLESTORE_NAMESPACE,
   * HANDLESTORE_CACERT (with HANDLESTORE_CERT and HANDLESTORE_KEY for a client certificate), and
   * HANDLESTORE_TOKEN, else the first line of HANDLESTORE_TOKEN_FILE. Change what you like, then
   * build.
   */
  public static Builder fromEnv() {
    return fromEnv(System.getenv());
  }

  /** {@link #fromEnv()} from the given variables. */
  public static Builder fromEnv(Map<String, String> env) {
    Builder b = builder();
    String endpoints = set(env, "HANDLESTORE_ENDPOINTS");
    if (endpoints != null) {
      b.endpoints(endpoints);
    }
    String ns = set(env, "HANDLESTORE_NAMESPACE");
    if (ns != null) {
      b.namespace(ns);
    }
    String ca = set(env, "HANDLESTORE_CACERT");
    if (ca != null) {
      String cert = set(env, "HANDLESTORE_CERT");
      String key = set(env, "HANDLESTORE_KEY");
      b.tls(
          Tls.fromFiles(
              java.nio.file.Path.of(ca),
              cert == null ? null : java.nio.file.Path.of(cert),
              key == null ? null : java.nio.file.Path.of(key)));
    }
    String token = set(env, "HANDLESTORE_TOKEN");
    String tokenFile = set(env, "HANDLESTORE_TOKEN_FILE");
    if (token != null) {
      b.token(token);
    } else if (tokenFile != null) {
      b.token(Tokens.readTokenFile(java.nio.file.Path.of(tokenFile)));
    }
    return b;
  }

  private static String set(Map<String, String> env, String name) {
    String v = env.get(name);
    return v == null || v.isEmpty() ? null : v;
  }

  /** The endpoints as given ("host:port" or "http(s)://host:port"). */
  public List<String> endpoints() {
    return endpoints;
  }

  /** The namespace every call uses. */
  public String namespace() {
    return namespace;
  }

  /** A builder of a {@link ClientConfig}. */
  public static final class Builder {
    private final List<String> endpoints = new ArrayList<>();
    private String namespace = DEFAULT_NAMESPACE;
    private Tls tls;
    private String token = "";
    // The defaults of proto/wire.txt, as every client has them.
    private Duration callTimeout = Wire.CALL_TIMEOUT;
    private Duration attemptTimeout = Wire.ATTEMPT_TIMEOUT;
    private Backoff backoff = Backoff.DEFAULT;
    private int maxWriteCalls = Wire.MAX_CALLS;
    private int maxReadCalls = Wire.MAX_CALLS;

    private Builder() {}

    /**
     * The nodes' client addresses, replacing any given before: "host:port", or "http://host:port"
     * ("https://" with TLS); each entry may hold several, comma-separated.
     */
    public Builder endpoints(String... endpoints) {
      return endpoints(List.of(endpoints));
    }

    /** {@link #endpoints(String...)} from a list. */
    public Builder endpoints(List<String> endpoints) {
      this.endpoints.clear();
      for (String e : endpoints) {
        for (String part : e.split(",")) {
          if (!part.isBlank()) {
            this.endpoints.add(part.strip());
          }
        }
      }
      return this;
    }

    /** The tenant every call uses ("default" when not set). */
    public Builder namespace(String namespace) {
      this.namespace = namespace == null || namespace.isEmpty() ? DEFAULT_NAMESPACE : namespace;
      return this;
    }

    /** TLS to the nodes (null: cleartext). */
    public Builder tls(Tls tls) {
      this.tls = tls;
      return this;
    }

    /** A user's bearer token, for clusters with auth enabled ("" or null: none). */
    public Builder token(String token) {
      this.token = token == null ? "" : token;
      return this;
    }

    /** What bounds a call across its retries when it names no timeout itself (default 15 s). */
    public Builder callTimeout(Duration d) {
      this.callTimeout = positive(d, "callTimeout");
      return this;
    }

    /** What bounds one attempt on one node (default 3 s). */
    public Builder attemptTimeout(Duration d) {
      this.attemptTimeout = positive(d, "attemptTimeout");
      return this;
    }

    /** The backoff between retries (default 25 ms, capped at 1 s). */
    public Builder backoff(Backoff backoff) {
      this.backoff = Objects.requireNonNull(backoff, "backoff");
      return this;
    }

    /**
     * How many calls carrying writes may be in flight at once (default 8): writes issued while all
     * are busy share the next Writes.Submit.
     */
    public Builder maxWriteCalls(int n) {
      this.maxWriteCalls = atLeastOne(n, "maxWriteCalls");
      return this;
    }

    /** The same for point reads and Reads.Submit (default 8). */
    public Builder maxReadCalls(int n) {
      this.maxReadCalls = atLeastOne(n, "maxReadCalls");
      return this;
    }

    /** The config; {@link Client#Client(ClientConfig)} checks it. */
    public ClientConfig build() {
      return new ClientConfig(this);
    }

    private static Duration positive(Duration d, String what) {
      if (d == null || d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(what + " must be positive");
      }
      return d;
    }

    private static int atLeastOne(int n, String what) {
      if (n < 1) {
        throw new IllegalArgumentException(what + " must be at least 1");
      }
      return n;
    }
  }

  /** The "host:port" of each endpoint, checked against the TLS setting. */
  List<String> targets() {
    if (endpoints.isEmpty()) {
      throw HandlestoreException.invalid("no endpoints given");
    }
    List<String> out = new ArrayList<>();
    for (String e : endpoints) {
      out.add(target(e, tls != null));
    }
    return out;
  }

  /** The "host:port" of "host:port" or "http(s)://host:port". */
  static String target(String raw, boolean tls) {
    int sep = raw.indexOf("://");
    String scheme = sep < 0 ? (tls ? "https" : "http") : raw.substring(0, sep);
    String rest = sep < 0 ? raw : raw.substring(sep + 3);
    if (!scheme.equals("http") && !scheme.equals("https")) {
      throw HandlestoreException.invalid(
          "endpoint \"" + raw + "\": scheme " + scheme + " is not supported (http or https)");
    }
    if (scheme.equals("https") && !tls) {
      throw HandlestoreException.invalid(
          "endpoint \"" + raw + "\": an https endpoint needs the cluster's CA (tls)");
    }
    if (scheme.equals("http") && tls) {
      throw HandlestoreException.invalid(
          "endpoint \"" + raw + "\": TLS is configured, so endpoints are https:// (or host:port)");
    }
    String host = rest.replaceAll("/+$", "");
    int colon = host.lastIndexOf(':');
    boolean portOk = colon > 0 && host.substring(colon + 1).matches("[0-9]{1,5}");
    if (host.isEmpty() || host.contains("/") || !portOk) {
      throw HandlestoreException.invalid("endpoint \"" + raw + "\": expected host:port");
    }
    return host;
  }

  /** Throws what is wrong with the config. */
  void validate() {
    Formats.checkNamespace(namespace);
    if (token.contains("\r") || token.contains("\n")) {
      throw HandlestoreException.invalid("the token holds characters a header cannot carry");
    }
  }
}
