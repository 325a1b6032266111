package io.github.handlestore.mcpclient;

import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.modern.client.transport.McpHttpAuthorizationErrorHandler;
import io.modelcontextprotocol.modern.client.transport.McpHttpRequest;
import io.modelcontextprotocol.modern.client.transport.McpHttpResponseInfo;
import java.util.Objects;
import reactor.core.publisher.Mono;

/**
 * The modern client's authorization error handler (set with {@code
 * HttpClientMcpTransport.builder(url).authorizationErrorHandler(...)}): a 401 for the bearer token
 * a request carried tells its {@link AccessTokenSource}, which forgets that token in the cluster
 * (for every process of the client) and says whether the request is worth sending once more with a
 * new one. A 403 (the token is good but not enough) is left to fail.
 */
public final class RefusedTokenHandler implements McpHttpAuthorizationErrorHandler {
  private static final int UNAUTHORIZED = 401;

  private final AccessTokenSource tokens;

  /** Tells {@code tokens}. */
  public RefusedTokenHandler(AccessTokenSource tokens) {
    this.tokens = Objects.requireNonNull(tokens, "tokens");
  }

  @Override
  public Mono<Boolean> handle(
      McpHttpRequest sent, McpHttpResponseInfo response, McpTransportContext context) {
    if (response.statusCode() != UNAUTHORIZED) {
      return Mono.just(false);
    }
    return Bearer.sent(sent.headers())
        .map(token -> Mono.fromFuture(() -> tokens.refused(token)))
        .orElseGet(() -> Mono.just(false));
  }
}
