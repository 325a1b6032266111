package io.github.handlestore.mcpclient.legacy;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.handlestore.client.ClientStateStore;
import io.github.handlestore.mcpclient.AccessTokenSource;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.spec.McpClientTransport;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One MCP client's Streamable HTTP session (the SDK's legacy client, protocol 2025-11-25 and
 * before) kept in the cluster: the session id the server gave, the server's {@code initialize}
 * result, and the bearer token each request carries. A process that restarts (or the same client on
 * another machine) resumes the session: its client is answered {@code initialize} from the cluster,
 * sends no handshake, and its requests carry the stored session id, so the server goes on with the
 * session it knows. A session the server no longer knows (HTTP 404) is forgotten, and the SDK's
 * client initializes anew, as it does on its own.
 *
 * <pre>{@code
 * ClusterSession session = new ClusterSession(store, AccessTokenSource.of(store));
 * McpSyncClient client =
 *     McpClient.sync(session.transport(HttpClientStreamableHttpTransport.builder(url))).build();
 * client.initialize(); // from the cluster after a restart
 * }</pre>
 *
 * <p>Kept under the client's key: {@code session-id}, {@code server-initialize} (the result as the
 * server sent it) and, in the layout the other clients share, {@code protocol-version} and {@code
 * server-capabilities}.
 */
public final class ClusterSession {
  /** The field of the server's {@code initialize} result. */
  public static final String INITIALIZE_FIELD = "server-initialize";

  /** The Streamable HTTP session header. */
  public static final String SESSION_HEADER = "Mcp-Session-Id";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<Map<String, Object>> AS_MAP = new TypeReference<>() {};

  private final ClientStateStore store;
  private final AccessTokenSource tokens;
  private final AtomicReference<String> resumed = new AtomicReference<>();
  private final AtomicReference<String> stored = new AtomicReference<>();

  /** The session of {@code store}'s client, with tokens from {@code tokens}. */
  public ClusterSession(ClientStateStore store, AccessTokenSource tokens) {
    this.store = Objects.requireNonNull(store, "store");
    this.tokens = Objects.requireNonNull(tokens, "tokens");
  }

  /**
   * Builds {@code http} with this session's request customizer (after any set on it before, so its
   * token and session header win) and authorization error handler, and wraps it so that {@code
   * initialize} is answered from the cluster when a session is stored. Give the result to {@code
   * McpClient.sync} or {@code async}. One transport per {@code ClusterSession}.
   */
  public McpClientTransport transport(HttpClientStreamableHttpTransport.Builder http) {
    HttpClientStreamableHttpTransport built =
        http.addAsyncHttpRequestCustomizer(new SessionCustomizer(this))
            .authorizationErrorHandler(new RefusedTokenRetry(tokens))
            .build();
    return new ResumingTransport(built, this);
  }

  /** The store this session is kept in. */
  public ClientStateStore store() {
    return store;
  }

  /** The session id the cluster holds for this client; empty if none. */
  public CompletableFuture<Optional<String>> storedSessionId() {
    return store.sessionId();
  }

  /** Forgets the stored session (its id and the server's initialize result). */
  public CompletableFuture<Void> forget() {
    stored.set(null);
    return CompletableFuture.allOf(store.clearSessionId(), store.clearField(INITIALIZE_FIELD));
  }

  AccessTokenSource tokens() {
    return tokens;
  }

  /** The session resumed from the cluster that the SDK's transport does not know of, if any. */
  String resumedId() {
    return resumed.get();
  }

  /** The session id this process goes on with (resumed, or the one its transport sent). */
  String currentId() {
    return stored.get();
  }

  /** What a resumable session needs: a stored id and initialize result, both or neither. */
  record Resumable(String sessionId, Map<String, Object> initializeResult) {}

  CompletableFuture<Optional<Resumable>> resumable() {
    CompletableFuture<Optional<String>> id = store.sessionId();
    CompletableFuture<Optional<Map<String, Object>>> init =
        store
            .field(INITIALIZE_FIELD, JsonNode.class)
            .thenApply(o -> o.filter(JsonNode::isObject).map(n -> JSON.convertValue(n, AS_MAP)));
    return id.thenCombine(
        init,
        (i, r) ->
            i.isPresent() && r.isPresent()
                ? Optional.of(new Resumable(i.get(), r.get()))
                : Optional.empty());
  }

  /** The transport goes on with {@code id} from the cluster. */
  void resume(String id) {
    resumed.set(id);
    stored.set(id);
  }

  /** A real {@code initialize} is on its way: the session it replaces is no longer resumable. */
  CompletableFuture<Void> initializing() {
    resumed.set(null);
    stored.set(null);
    return store.clearSessionId();
  }

  /** The server answered {@code initialize}: kept for the next process. */
  CompletableFuture<Void> initialized(Map<String, Object> result) {
    CompletableFuture<Void> caps =
        result.get("capabilities") == null
            ? CompletableFuture.completedFuture(null)
            : store.setServerCapabilities(result.get("capabilities"));
    CompletableFuture<Void> version =
        result.get("protocolVersion") instanceof String v
            ? store.setProtocolVersion(v)
            : CompletableFuture.completedFuture(null);
    return CompletableFuture.allOf(store.setField(INITIALIZE_FIELD, result), caps, version);
  }

  /** The transport sent {@code id}: stored if it is new (the server gave it on initialize). */
  CompletableFuture<Void> sent(String id) {
    String before = stored.getAndSet(id);
    if (!id.equals(resumed.get())) {
      resumed.set(null);
    }
    return id.equals(before) ? CompletableFuture.completedFuture(null) : store.setSessionId(id);
  }

  /**
   * The session {@code id} ended (deleted, or unknown to the server): forgotten if still stored.
   */
  CompletableFuture<Void> ended(String id) {
    resumed.compareAndSet(id, null);
    stored.compareAndSet(id, null);
    return store
        .sessionId()
        .thenCompose(
            s ->
                s.isPresent() && s.get().equals(id)
                    ? forget()
                    : CompletableFuture.completedFuture(null));
  }
}
