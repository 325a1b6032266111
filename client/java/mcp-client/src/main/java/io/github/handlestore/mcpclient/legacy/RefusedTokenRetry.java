package io.github.handlestore.mcpclient.legacy;

import io.github.handlestore.mcpclient.AccessTokenSource;
import io.github.handlestore.mcpclient.Bearer;
import io.modelcontextprotocol.client.transport.HttpRequestSnapshot;
import io.modelcontextprotocol.client.transport.customizer.McpHttpClientTransportAuthorizationErrorHandler;
import io.modelcontextprotocol.common.McpTransportContext;
import java.net.http.HttpResponse.ResponseInfo;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * The legacy transport's authorization error handler: a 401 for the bearer token a request carried
 * tells the {@link AccessTokenSource}, which forgets it for every process of the client and says
 * whether to send the request again with a new one (as the modern client's {@code
 * RefusedTokenHandler}).
 */
final class RefusedTokenRetry implements McpHttpClientTransportAuthorizationErrorHandler {
  private static final int UNAUTHORIZED = 401;

  private final AccessTokenSource tokens;

  RefusedTokenRetry(AccessTokenSource tokens) {
    this.tokens = tokens;
  }

  @Override
  public Publisher<Boolean> handle(
      HttpRequestSnapshot request, ResponseInfo response, McpTransportContext context) {
    if (response.statusCode() != UNAUTHORIZED) {
      return Mono.just(false);
    }
    return Bearer.sent(request.headers())
        .map(token -> Mono.fromFuture(() -> tokens.refused(token)))
        .orElseGet(() -> Mono.just(false));
  }
}
