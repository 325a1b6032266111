package io.github.handlestore.spring;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Set;
import org.springframework.security.oauth2.client.OAuth2AuthorizedClient;
import org.springframework.security.oauth2.client.registration.ClientRegistration;
import org.springframework.security.oauth2.core.OAuth2AccessToken;
import org.springframework.security.oauth2.core.OAuth2RefreshToken;

/**
 * An authorized client's tokens as the {@code oauth-tokens} field holds them: the OAuth token
 * response's names (RFC 6749 section 5.1: {@code access_token}, {@code token_type}, {@code
 * expires_in}, {@code scope}, {@code refresh_token}), which the Python, TypeScript and Go adapters
 * write and read, plus {@code expires_at} (RFC 3339, as Go's token has it) and {@code issued_at},
 * so that another process knows when the token runs out. Unknown names are ignored.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
record StoredOAuthTokens(
    @JsonProperty("access_token") String accessToken,
    @JsonProperty("token_type") String tokenType,
    @JsonProperty("expires_in") Long expiresIn,
    @JsonProperty("scope") String scope,
    @JsonProperty("refresh_token") String refreshToken,
    @JsonProperty("issued_at") String issuedAt,
    @JsonProperty("expires_at") String expiresAt,
    @JsonProperty("refresh_token_issued_at") String refreshIssuedAt,
    @JsonProperty("refresh_token_expires_at") String refreshExpiresAt) {

  /** What {@code client} holds. */
  static StoredOAuthTokens of(OAuth2AuthorizedClient client) {
    OAuth2AccessToken access = client.getAccessToken();
    OAuth2RefreshToken refresh = client.getRefreshToken();
    Long expiresIn =
        access.getIssuedAt() != null && access.getExpiresAt() != null
            ? Duration.between(access.getIssuedAt(), access.getExpiresAt()).toSeconds()
            : null;
    return new StoredOAuthTokens(
        access.getTokenValue(),
        access.getTokenType().getValue(),
        expiresIn,
        access.getScopes().isEmpty() ? null : String.join(" ", access.getScopes()),
        refresh == null ? null : refresh.getTokenValue(),
        text(access.getIssuedAt()),
        text(access.getExpiresAt()),
        refresh == null ? null : text(refresh.getIssuedAt()),
        refresh == null ? null : text(refresh.getExpiresAt()));
  }

  /**
   * The authorized client of {@code principalName} for {@code registration}. A token another client
   * wrote without {@code expires_at} has no known expiry: it is used until the server refuses it.
   */
  OAuth2AuthorizedClient toClient(ClientRegistration registration, String principalName) {
    Instant issued = instant(issuedAt);
    Instant expires = instant(expiresAt);
    if (expires == null && issued != null && expiresIn != null) {
      expires = issued.plusSeconds(expiresIn);
    }
    OAuth2AccessToken access =
        new OAuth2AccessToken(type(), accessToken, issued, expires, scopes());
    OAuth2RefreshToken refresh =
        refreshToken == null
            ? null
            : new OAuth2RefreshToken(
                refreshToken, instant(refreshIssuedAt), instant(refreshExpiresAt));
    return new OAuth2AuthorizedClient(registration, principalName, access, refresh);
  }

  /** RFC 3339, as Go's {@code time.Time} writes it. */
  private static String text(Instant at) {
    return at == null ? null : at.toString();
  }

  private static Instant instant(String text) {
    return text == null ? null : OffsetDateTime.parse(text).toInstant();
  }

  private OAuth2AccessToken.TokenType type() {
    return OAuth2AccessToken.TokenType.DPOP.getValue().equalsIgnoreCase(tokenType)
        ? OAuth2AccessToken.TokenType.DPOP
        : OAuth2AccessToken.TokenType.BEARER;
  }

  private Set<String> scopes() {
    return scope == null || scope.isBlank()
        ? Set.of()
        : new LinkedHashSet<>(Arrays.asList(scope.trim().split("\\s+")));
  }
}
