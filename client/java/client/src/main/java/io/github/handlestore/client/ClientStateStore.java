package io.github.handlestore.client;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.handlestore.client.errors.HandlestoreException;
import io.github.handlestore.client.internal.Futures;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * What an MCP client must remember to survive its own restart (the Java SDK's issue #376: session
 * id, access token, negotiated protocol version, server capabilities), kept in the state tool under
 * {@code mcp-clients/<client key>/<field>}, the keys and encodings of the other clients' {@code
 * ClientStateStore}: plain JSON strings, the capabilities as JSON, and the access token sealed with
 * the replicated key ring (AES-256-GCM, {@link SealMode#ENCRYPTED}, bound to the client key and the
 * field), so only holders of the ring read it and a second process of the same client, on any
 * machine, sees the same state. As the rest of the client: futures, and {@link #blocking()}.
 */
public final class ClientStateStore {
  /** The state-tool prefix of every client's state. */
  public static final String ROOT = "mcp-clients";

  /** The field of the session id. */
  public static final String SESSION_ID = "session-id";

  /** The field of the sealed access token. */
  public static final String ACCESS_TOKEN = "access-token";

  /** The field of the negotiated protocol version. */
  public static final String PROTOCOL_VERSION = "protocol-version";

  /** The field of the server's capabilities. */
  public static final String SERVER_CAPABILITIES = "server-capabilities";

  /** A sealed field carries an expiry; the store's own TTL (none) governs, so it is far off. */
  static final Duration SEAL_TTL = Duration.ofDays(10 * 365);

  private static final int MAX_CLIENT_KEY_BYTES = 128;

  private final StateTool tool;
  private final RequestStateCodec codec;
  private final String clientKey;

  /**
   * The state of the MCP client {@code clientKey} (say, the server URL's host and a user id: 1 to
   * 128 bytes without '/' or control characters), sealing with {@code codec}, which must encrypt.
   *
   * @throws io.github.handlestore.client.errors.InvalidArgumentException otherwise
   */
  public ClientStateStore(StateTool tool, RequestStateCodec codec, String clientKey) {
    if (codec.mode() != SealMode.ENCRYPTED) {
      throw HandlestoreException.invalid(
          "the access token needs an encrypting codec (SealMode.ENCRYPTED)");
    }
    checkClientKey(clientKey);
    this.tool = Objects.requireNonNull(tool, "tool");
    this.codec = codec;
    this.clientKey = clientKey;
  }

  /**
   * The store in {@code client}'s namespace, sealing with its key ring (which must exist: {@code
   * handlestore keyring create}, or {@link KeyRing#create()}).
   */
  public static CompletableFuture<ClientStateStore> fromCluster(Client client, String clientKey) {
    try {
      checkClientKey(clientKey);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return Futures.map(
        RequestStateCodec.fromCluster(client, SealMode.ENCRYPTED),
        codec -> new ClientStateStore(client.stateTool(), codec, clientKey));
  }

  static void checkClientKey(String key) {
    boolean ok =
        key != null
            && !key.isEmpty()
            && Formats.utf8Length(key) > 0
            && Formats.utf8Length(key) <= MAX_CLIENT_KEY_BYTES
            && key.indexOf('/') < 0
            && key.codePoints().noneMatch(cp -> Character.getType(cp) == Character.CONTROL);
    if (!ok) {
      throw HandlestoreException.invalid(
          "client key "
              + Formats.shown(String.valueOf(key))
              + " must be 1-128 bytes without '/' or control characters");
    }
  }

  /** The client key this store keeps the state of. */
  public String clientKey() {
    return clientKey;
  }

  /** This store with methods that wait. */
  public BlockingClientStateStore blocking() {
    return new BlockingClientStateStore(this);
  }

  private String key(String field) {
    return ROOT + "/" + clientKey + "/" + field;
  }

  /** A field's JSON string; empty if there is none, or it is not a string. */
  private CompletableFuture<Optional<String>> text(String field) {
    return Futures.map(tool.retrieve(key(field)), e -> e.flatMap(ClientStateStore::stringOf));
  }

  private static Optional<String> stringOf(StateEntry e) {
    if (!e.value().isJson()) {
      return Optional.empty();
    }
    try {
      JsonNode n =
          JacksonCodec.DEFAULT_MAPPER.readTree(
              e.value().jsonText().getBytes(StandardCharsets.UTF_8));
      return n.isTextual() ? Optional.of(n.textValue()) : Optional.empty();
    } catch (java.io.IOException x) {
      return Optional.empty();
    }
  }

  private CompletableFuture<Void> set(String field, Object value) {
    return Futures.map(tool.store(key(field), value), r -> null);
  }

  private CompletableFuture<Void> clear(String field) {
    return Futures.map(tool.delete(key(field)), r -> null);
  }

  /** Stores the session id. */
  public CompletableFuture<Void> setSessionId(String id) {
    return set(SESSION_ID, Objects.requireNonNull(id, "id"));
  }

  /** The stored session id; empty if there is none. */
  public CompletableFuture<Optional<String>> sessionId() {
    return text(SESSION_ID);
  }

  /** Forgets the session id. */
  public CompletableFuture<Void> clearSessionId() {
    return clear(SESSION_ID);
  }

  /** Null if {@code field} is one key segment (no '/'), else the refusal. */
  private static HandlestoreException badField(String field) {
    if (field == null || field.isEmpty() || field.indexOf('/') >= 0) {
      return HandlestoreException.invalid(
          "field " + Formats.shown(String.valueOf(field)) + " must be one key segment");
    }
    return null;
  }

  /**
   * Stores any JSON {@code value} under {@code field} (one key segment: no '/'), in the clear: for
   * what is not secret (a server's metadata), as the TypeScript store's {@code setField}.
   */
  public CompletableFuture<Void> setField(String field, Object value) {
    HandlestoreException bad = badField(field);
    return bad != null
        ? CompletableFuture.failedFuture(bad)
        : set(field, Objects.requireNonNull(value, "value"));
  }

  /** What {@link #setField} stored under {@code field}, as a {@code type}; empty if none. */
  public <T> CompletableFuture<Optional<T>> field(String field, Class<T> type) {
    HandlestoreException bad = badField(field);
    return bad != null ? CompletableFuture.failedFuture(bad) : tool.get(key(field), type);
  }

  /** Forgets {@code field}. */
  public CompletableFuture<Void> clearField(String field) {
    HandlestoreException bad = badField(field);
    return bad != null ? CompletableFuture.failedFuture(bad) : clear(field);
  }

  /**
   * Stores any JSON {@code value} under {@code field} (one key segment: no '/'), encrypted and
   * bound to this client key and the field.
   */
  public CompletableFuture<Void> setSealed(String field, Object value) {
    HandlestoreException bad = badField(field);
    if (bad != null) {
      return CompletableFuture.failedFuture(bad);
    }
    return Futures.compose(
        codec.seal(value, clientKey, SealOptions.DEFAULT.forTool(field).withTtl(SEAL_TTL)),
        blob -> set(field, blob));
  }

  /**
   * What {@link #setSealed} stored under {@code field}, as a {@code type}; empty if nothing is
   * there, or it no longer decrypts (its key was retired).
   */
  public <T> CompletableFuture<Optional<T>> sealed(String field, Class<T> type) {
    return Futures.compose(
        text(field),
        blob ->
            blob.isEmpty()
                ? CompletableFuture.completedFuture(Optional.<T>empty())
                : codec.open(blob.get(), clientKey, field, type));
  }

  /**
   * What {@link #setSealed} stored under {@code field}, as a {@code type}, telling apart the two
   * cases {@link #sealed} folds into empty: empty if nothing is stored; failed with {@link
   * SealedFieldException} if something is stored that this key ring does not open (sealed by
   * another cluster's or namespace's ring, for another client key or field, or with a key since
   * retired). For an adapter that must refuse such a value out loud rather than start a new sign-in
   * unasked.
   */
  public <T> CompletableFuture<Optional<T>> openSealed(String field, Class<T> type) {
    HandlestoreException bad = badField(field);
    if (bad != null) {
      return CompletableFuture.failedFuture(bad);
    }
    JacksonCodec<T> decode = JacksonCodec.of(type);
    return Futures.compose(
        tool.retrieve(key(field)),
        entry -> {
          if (entry.isEmpty()) {
            return CompletableFuture.completedFuture(Optional.<T>empty());
          }
          Optional<String> blob = stringOf(entry.get());
          if (blob.isEmpty()) {
            return CompletableFuture.failedFuture(
                new SealedFieldException(key(field), "it is not a sealed blob"));
          }
          return Futures.map(
              codec.open(blob.get(), clientKey, field),
              json ->
                  Optional.of(
                      decode.decode(
                          json.orElseThrow(() -> new SealedFieldException(key(field), NOT_OPENED))
                              .getBytes(StandardCharsets.UTF_8))));
        });
  }

  private static final String NOT_OPENED =
      "this namespace's key ring does not open it (sealed by another cluster's or namespace's"
          + " ring, for another client key or field, or with a key since retired)";

  /** Stores the access token, encrypted. */
  public CompletableFuture<Void> setAccessToken(String token) {
    return setSealed(ACCESS_TOKEN, Objects.requireNonNull(token, "token"));
  }

  /**
   * The access token; empty if there is none or it no longer decrypts: then the client signs in
   * again.
   */
  public CompletableFuture<Optional<String>> accessToken() {
    CompletableFuture<Optional<String>> f = sealed(ACCESS_TOKEN, String.class);
    return Futures.linked(
        f.exceptionally(
            e -> {
              if (Futures.unwrap(e) instanceof ValueCodecException) {
                return Optional.empty();
              }
              throw new java.util.concurrent.CompletionException(Futures.unwrap(e));
            }),
        f);
  }

  /** Forgets the access token. */
  public CompletableFuture<Void> clearAccessToken() {
    return clear(ACCESS_TOKEN);
  }

  /** Stores the negotiated protocol version. */
  public CompletableFuture<Void> setProtocolVersion(String version) {
    return set(PROTOCOL_VERSION, Objects.requireNonNull(version, "version"));
  }

  /** The stored protocol version; empty if there is none. */
  public CompletableFuture<Optional<String>> protocolVersion() {
    return text(PROTOCOL_VERSION);
  }

  /** Forgets the protocol version. */
  public CompletableFuture<Void> clearProtocolVersion() {
    return clear(PROTOCOL_VERSION);
  }

  /** Stores the server's capabilities (anything Jackson writes as JSON). */
  public CompletableFuture<Void> setServerCapabilities(Object capabilities) {
    return set(SERVER_CAPABILITIES, Objects.requireNonNull(capabilities, "capabilities"));
  }

  /** The stored capabilities as a {@code type} (a {@code JsonNode}, a map, ...); empty if none. */
  public <T> CompletableFuture<Optional<T>> serverCapabilities(Class<T> type) {
    return tool.get(key(SERVER_CAPABILITIES), type);
  }

  /** Forgets the capabilities. */
  public CompletableFuture<Void> clearServerCapabilities() {
    return clear(SERVER_CAPABILITIES);
  }

  /** Forgets everything stored for this client. */
  public CompletableFuture<Void> clear() {
    return Futures.map(tool.deletePrefix(ROOT + "/" + clientKey + "/", 100), d -> null);
  }
}
