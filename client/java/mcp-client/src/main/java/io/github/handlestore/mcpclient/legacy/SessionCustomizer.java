package io.github.handlestore.mcpclient.legacy;

import io.github.handlestore.mcpclient.Bearer;
import io.modelcontextprotocol.client.transport.customizer.McpAsyncHttpClientRequestCustomizer;
import io.modelcontextprotocol.common.McpTransportContext;
import java.net.URI;
import java.net.http.HttpRequest;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * The legacy transport's request customizer for a {@link ClusterSession}: learns the session id the
 * transport sends (the SDK gives no hook on its responses, so the id the server returned on {@code
 * initialize} is seen on the next request, {@code notifications/initialized}, and stored then),
 * adds the resumed session's id to requests when the transport has none, forgets the session on its
 * {@code DELETE}, and sets the bearer token.
 */
final class SessionCustomizer implements McpAsyncHttpClientRequestCustomizer {
  private final ClusterSession session;

  SessionCustomizer(ClusterSession session) {
    this.session = session;
  }

  @Override
  public Publisher<HttpRequest.Builder> customize(
      HttpRequest.Builder builder,
      String method,
      URI endpoint,
      String body,
      McpTransportContext context) {
    return Mono.fromFuture(() -> session(builder, method))
        .then(Mono.fromFuture(() -> session.tokens().accessToken()))
        .map(
            token -> {
              token.ifPresent(t -> builder.setHeader(Bearer.HEADER, Bearer.value(t)));
              return builder;
            });
  }

  private CompletableFuture<Void> session(HttpRequest.Builder builder, String method) {
    Optional<String> own = sessionHeader(builder);
    if (own.isPresent()) {
      return "DELETE".equals(method) ? session.ended(own.get()) : session.sent(own.get());
    }
    String resumed = session.resumedId();
    if (resumed != null) {
      builder.setHeader(ClusterSession.SESSION_HEADER, resumed);
    }
    return CompletableFuture.completedFuture(null);
  }

  /** The session id the transport put on the request (read from a copy: a builder shows none). */
  private static Optional<String> sessionHeader(HttpRequest.Builder builder) {
    try {
      return builder.copy().build().headers().firstValue(ClusterSession.SESSION_HEADER);
    } catch (IllegalStateException noUri) {
      return Optional.empty();
    }
  }
}
