package io.github.handlestore.mcpclient;

import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.modern.client.transport.McpHttpRequest;
import io.modelcontextprotocol.modern.client.transport.McpHttpRequestCustomizer;
import io.modelcontextprotocol.modern.client.transport.McpHttpRequestHeaders;
import java.util.Objects;
import reactor.core.publisher.Mono;

/**
 * The modern client's request customizer (set with {@code
 * HttpClientMcpTransport.builder(url).requestCustomizer(...)}): every request carries the token its
 * {@link AccessTokenSource} gives at that moment, read from the cluster, so a restarted process or
 * another machine's sends the token the first one got, and no new sign-in happens.
 */
public final class BearerTokenCustomizer implements McpHttpRequestCustomizer {
  private final AccessTokenSource tokens;

  /** Tokens from {@code tokens}. */
  public BearerTokenCustomizer(AccessTokenSource tokens) {
    this.tokens = Objects.requireNonNull(tokens, "tokens");
  }

  @Override
  public Mono<Void> customize(
      McpHttpRequest request, McpHttpRequestHeaders headers, McpTransportContext context) {
    return Mono.fromFuture(tokens::accessToken)
        .doOnNext(token -> token.ifPresent(t -> headers.set(Bearer.HEADER, Bearer.value(t))))
        .then();
  }
}
