package io.github.handlestore.spring;

import io.github.handlestore.mcpclient.AccessTokenSource;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.oauth2.client.OAuth2AuthorizeRequest;
import org.springframework.security.oauth2.client.OAuth2AuthorizedClient;
import org.springframework.security.oauth2.client.OAuth2AuthorizedClientManager;
import org.springframework.security.oauth2.client.OAuth2AuthorizedClientService;
import org.springframework.security.oauth2.core.OAuth2AccessToken;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The MCP SDK client's bearer tokens (handlestore-mcp-client's {@link AccessTokenSource}) from
 * Spring Security: each request asks the {@link OAuth2AuthorizedClientManager}, which loads the
 * authorized client from the service (with {@link ClusterOAuth2AuthorizedClientService}: from the
 * cluster) and asks the authorization server only when there is no token or it expired. The manager
 * blocks, so it runs on Reactor's bounded elastic threads, never on the HTTP client's.
 *
 * <p>A token the MCP server refuses (401) is made stale in the service, for every process: with a
 * refresh token it is marked expired, so the manager refreshes it; without one it is removed, so
 * the manager signs in anew (client credentials) or fails asking for the user's authorization.
 */
public final class OAuth2AccessTokenSource implements AccessTokenSource {
  private final OAuth2AuthorizedClientManager manager;
  private final OAuth2AuthorizedClientService service;
  private final String registrationId;
  private final Authentication principal;

  /** Tokens of {@code principalName}'s client for {@code registrationId}. */
  public OAuth2AccessTokenSource(
      OAuth2AuthorizedClientManager manager,
      OAuth2AuthorizedClientService service,
      String registrationId,
      String principalName) {
    this(manager, service, registrationId, named(principalName));
  }

  /** Tokens of {@code principal}'s client for {@code registrationId}. */
  public OAuth2AccessTokenSource(
      OAuth2AuthorizedClientManager manager,
      OAuth2AuthorizedClientService service,
      String registrationId,
      Authentication principal) {
    this.manager = Objects.requireNonNull(manager, "manager");
    this.service = Objects.requireNonNull(service, "service");
    this.registrationId = Objects.requireNonNull(registrationId, "registrationId");
    this.principal = Objects.requireNonNull(principal, "principal");
  }

  /** A principal known by its name only (a service account, a user id), as Spring makes one. */
  private static Authentication named(String name) {
    return UsernamePasswordAuthenticationToken.authenticated(
        Objects.requireNonNull(name, "principalName"), null, AuthorityUtils.NO_AUTHORITIES);
  }

  @Override
  public CompletableFuture<Optional<String>> accessToken() {
    return Mono.fromCallable(this::authorize)
        .subscribeOn(Schedulers.boundedElastic())
        .toFuture()
        .thenApply(c -> Optional.ofNullable(c).map(a -> a.getAccessToken().getTokenValue()));
  }

  private OAuth2AuthorizedClient authorize() {
    return manager.authorize(
        OAuth2AuthorizeRequest.withClientRegistrationId(registrationId)
            .principal(principal)
            .build());
  }

  @Override
  public CompletableFuture<Boolean> refused(String token) {
    return Mono.fromCallable(() -> stale(token))
        .subscribeOn(Schedulers.boundedElastic())
        .toFuture();
  }

  /** Makes {@code token} stale if it is still the stored one; true: a new one may be had. */
  private boolean stale(String token) {
    OAuth2AuthorizedClient stored =
        service.loadAuthorizedClient(registrationId, principal.getName());
    if (stored == null || !stored.getAccessToken().getTokenValue().equals(token)) {
      return stored != null;
    }
    if (stored.getRefreshToken() == null) {
      service.removeAuthorizedClient(registrationId, principal.getName());
    } else {
      service.saveAuthorizedClient(expired(stored), principal);
    }
    return true;
  }

  private static OAuth2AuthorizedClient expired(OAuth2AuthorizedClient client) {
    OAuth2AccessToken was = client.getAccessToken();
    Instant now = Instant.now();
    OAuth2AccessToken gone =
        new OAuth2AccessToken(
            was.getTokenType(),
            was.getTokenValue(),
            now.minus(Duration.ofHours(1)),
            now.minus(Duration.ofMinutes(30)),
            was.getScopes());
    return new OAuth2AuthorizedClient(
        client.getClientRegistration(), client.getPrincipalName(), gone, client.getRefreshToken());
  }
}
