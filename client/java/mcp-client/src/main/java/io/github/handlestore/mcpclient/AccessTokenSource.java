package io.github.handlestore.mcpclient;

import io.github.handlestore.client.ClientStateStore;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * Where the customizers of this package take the bearer token an MCP request carries, and whom they
 * tell when the server refuses it. {@link #of(ClientStateStore)} reads the client state store's
 * sealed access token; the Spring module has one over Spring Security's {@code
 * OAuth2AuthorizedClientManager} (a token from the cluster, a new one only when there is none or it
 * expired). Every call may go to the cluster, so a token another process of the same client saved
 * is the one used.
 */
public interface AccessTokenSource {
  /** The token to send; empty to send none. */
  CompletableFuture<Optional<String>> accessToken();

  /**
   * The server refused {@code token} (HTTP 401): forget it. True if a new token may now be had, so
   * that the request is sent once more; false (the default) to fail it with the server's answer.
   */
  default CompletableFuture<Boolean> refused(String token) {
    return CompletableFuture.completedFuture(false);
  }

  /**
   * The access token of {@code store} ({@code mcp-clients/<client key>/access-token}, sealed with
   * the key ring), which the application's own sign-in saved there. A token this ring does not open
   * (another cluster's or namespace's, or sealed with a retired key) fails the request with {@link
   * io.github.handlestore.client.SealedFieldException} rather than going out without one; a token
   * the server refuses is cleared, and the request fails: the application signs in again.
   */
  static AccessTokenSource of(ClientStateStore store) {
    return new StoredAccessToken(store);
  }
}
