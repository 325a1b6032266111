package io.github.handlestore.mcpclient.legacy;

import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpClientTransport;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpTransportSessionNotFoundException;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * The SDK's Streamable HTTP transport, resuming a session kept in the cluster. The SDK has no way
 * to start a transport on a known session id, nor a client on a known {@code initialize} result, so
 * this stands between the client and the transport: the client's first {@code initialize} is
 * answered with the stored result (and its {@code notifications/initialized} not sent) when a
 * session is stored, and the {@link SessionCustomizer} adds the stored id to the requests. Every
 * later {@code initialize} (the SDK sends one when the server no longer knows the session) goes to
 * the server, and its answer is kept.
 */
final class ResumingTransport implements McpClientTransport {
  private static final String INITIALIZE = "initialize";

  private final McpClientTransport delegate;
  private final ClusterSession session;
  private final AtomicReference<
          Function<Mono<McpSchema.JSONRPCMessage>, Mono<McpSchema.JSONRPCMessage>>>
      handler = new AtomicReference<>();
  private final AtomicBoolean firstInitialize = new AtomicBoolean(true);
  private final AtomicBoolean skipInitialized = new AtomicBoolean();
  private final AtomicReference<Object> initializeId = new AtomicReference<>();

  ResumingTransport(McpClientTransport delegate, ClusterSession session) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.session = session;
  }

  @Override
  public Mono<Void> connect(
      Function<Mono<McpSchema.JSONRPCMessage>, Mono<McpSchema.JSONRPCMessage>> handler) {
    this.handler.set(handler);
    return delegate.connect(in -> handler.apply(in.flatMap(this::observe)));
  }

  /** Keeps the server's answer to a real {@code initialize}, then hands it on. */
  private Mono<McpSchema.JSONRPCMessage> observe(McpSchema.JSONRPCMessage message) {
    Object waiting = initializeId.get();
    if (waiting != null
        && message instanceof McpSchema.JSONRPCResponse r
        && r.error() == null
        && waiting.equals(r.id())
        && initializeId.compareAndSet(waiting, null)) {
      Map<String, Object> result = delegate.unmarshalFrom(r.result(), new TypeRef<>() {});
      return Mono.fromFuture(() -> session.initialized(result)).thenReturn(message);
    }
    return Mono.just(message);
  }

  @Override
  public Mono<Void> sendMessage(McpSchema.JSONRPCMessage message) {
    if (message instanceof McpSchema.JSONRPCRequest r && INITIALIZE.equals(r.method())) {
      return firstInitialize.getAndSet(false) ? resumeOrSend(r) : send(r);
    }
    if (message instanceof McpSchema.JSONRPCNotification n
        && McpSchema.METHOD_NOTIFICATION_INITIALIZED.equals(n.method())
        && skipInitialized.getAndSet(false)) {
      return Mono.empty();
    }
    return delegate.sendMessage(message);
  }

  private Mono<Void> resumeOrSend(McpSchema.JSONRPCRequest initialize) {
    return Mono.fromFuture(session::resumable)
        .flatMap(
            stored -> {
              if (stored.isEmpty()) {
                return send(initialize);
              }
              session.resume(stored.get().sessionId());
              skipInitialized.set(true);
              McpSchema.JSONRPCResponse answer =
                  new McpSchema.JSONRPCResponse(
                      McpSchema.JSONRPC_VERSION,
                      initialize.id(),
                      stored.get().initializeResult(),
                      null);
              return handler.get().apply(Mono.just(answer)).then();
            });
  }

  private Mono<Void> send(McpSchema.JSONRPCRequest initialize) {
    initializeId.set(initialize.id());
    return Mono.fromFuture(session::initializing).then(delegate.sendMessage(initialize));
  }

  @Override
  public void setExceptionHandler(Consumer<Throwable> handler) {
    delegate.setExceptionHandler(
        t -> {
          if (t instanceof McpTransportSessionNotFoundException) {
            String lost = session.currentId();
            if (lost != null) {
              session.ended(lost);
            }
          }
          handler.accept(t);
        });
  }

  @Override
  public Mono<Void> closeGracefully() {
    return delegate.closeGracefully();
  }

  @Override
  public void close() {
    delegate.close();
  }

  @Override
  public <T> T unmarshalFrom(Object data, TypeRef<T> typeRef) {
    return delegate.unmarshalFrom(data, typeRef);
  }

  @Override
  public List<String> protocolVersions() {
    return delegate.protocolVersions();
  }
}
