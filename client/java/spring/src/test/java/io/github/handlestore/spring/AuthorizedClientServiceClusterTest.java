package io.github.handlestore.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.handlestore.client.Client;
import io.github.handlestore.client.SealedFieldException;
import io.github.handlestore.client.testkit.SharedCluster;
import io.github.handlestore.mcpclient.testing.TokenEndpoint;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.oauth2.client.OAuth2AuthorizedClient;
import org.springframework.security.oauth2.core.OAuth2AccessToken;
import org.springframework.security.oauth2.core.OAuth2RefreshToken;

/**
 * The authorized client service on a real cluster, driven by Spring's own manager against a token
 * endpoint that counts its requests: a second service (another process, through other nodes) reuses
 * the token the first one got; tokens are sealed in the shared layout; what cannot be used is
 * refused out loud; nothing stored is null.
 */
class AuthorizedClientServiceClusterTest {
  @RegisterExtension static final SharedCluster CLUSTER = new SharedCluster();

  static final String NS = "java-spring-oauth";
  static Client first;
  static Client second;
  static TokenEndpoint auth;

  @BeforeAll
  static void start() {
    first = CLUSTER.get().client(NS, b -> {});
    List<String> other = new ArrayList<>(CLUSTER.get().endpoints());
    Collections.rotate(other, -1);
    second = CLUSTER.get().client(NS, b -> b.endpoints(other));
    first.keyRing().blocking().create();
    auth = TokenEndpoint.start(OAuthSetup.CLIENT_ID, OAuthSetup.CLIENT_SECRET, 3600);
  }

  @AfterAll
  static void stop() throws Exception {
    for (AutoCloseable c : new AutoCloseable[] {auth, first, second}) {
      if (c != null) {
        c.close();
      }
    }
  }

  @Test
  void anotherProcessReusesTheTokenAndAsksForNoNewOne() {
    OAuthSetup one = new OAuthSetup(first, auth.uri());
    int before = auth.requests();
    OAuth2AuthorizedClient got = one.authorize("alice");
    assertEquals(before + 1, auth.requests());

    OAuthSetup two = new OAuthSetup(second, auth.uri());
    OAuth2AuthorizedClient again = two.authorize("alice");
    assertEquals(before + 1, auth.requests(), "a new token was asked for");
    assertEquals(got.getAccessToken().getTokenValue(), again.getAccessToken().getTokenValue());
    assertEquals(got.getAccessToken().getExpiresAt(), again.getAccessToken().getExpiresAt());
    assertEquals(Set.of("mcp"), again.getAccessToken().getScopes());
    assertEquals("alice", again.getPrincipalName());

    two.service.removeAuthorizedClient(OAuthSetup.REGISTRATION, "alice");
    assertNull(one.service.loadAuthorizedClient(OAuthSetup.REGISTRATION, "alice"));
    assertNotEquals(
        got.getAccessToken().getTokenValue(),
        one.authorize("alice").getAccessToken().getTokenValue());
    assertEquals(before + 2, auth.requests());
  }

  @Test
  void anExpiredTokenIsReplacedBecauseItsExpiryIsStored() {
    try (TokenEndpoint shortLived =
        TokenEndpoint.start(OAuthSetup.CLIENT_ID, OAuthSetup.CLIENT_SECRET, 30)) {
      // Spring takes a token as expired 60 s before its end: each authorize asks anew.
      new OAuthSetup(first, shortLived.uri()).authorize("erin");
      new OAuthSetup(second, shortLived.uri()).authorize("erin");
      assertEquals(2, shortLived.requests());
    }
  }

  @Test
  void theTokensAreSealedInTheLayoutTheOtherClientsShare() {
    OAuthSetup one = new OAuthSetup(first, auth.uri());
    String token = one.authorize("bob").getAccessToken().getTokenValue();
    String key = "mcp-clients/mcp-server|bob/oauth-tokens";
    String blob = first.stateTool().blocking().get(key, String.class).orElseThrow();
    assertTrue(blob.startsWith("v1e."), blob);
    assertFalse(blob.contains(token));
    JsonNode tokens =
        one.service
            .clientState(OAuthSetup.REGISTRATION, "bob")
            .blocking()
            .sealed("oauth-tokens", JsonNode.class)
            .orElseThrow();
    assertEquals(token, tokens.get("access_token").textValue());
    assertEquals("Bearer", tokens.get("token_type").textValue());
    assertEquals(3600, tokens.get("expires_in").longValue());
    assertEquals("mcp", tokens.get("scope").textValue());
    Instant.parse(tokens.get("expires_at").textValue());
  }

  @Test
  void aTokenAnotherClientWroteWithoutAnExpiryLoadsAndARefreshTokenComesBack() {
    OAuthSetup one = new OAuthSetup(first, auth.uri());
    one.service
        .clientState(OAuthSetup.REGISTRATION, "py-user")
        .blocking()
        .setSealed(
            "oauth-tokens",
            Map.of(
                "access_token", "from-python",
                "token_type", "bearer",
                "expires_in", 3600,
                "refresh_token", "r-1",
                "scope", "a b"));
    OAuth2AuthorizedClient loaded =
        new OAuthSetup(second, auth.uri())
            .service.loadAuthorizedClient(OAuthSetup.REGISTRATION, "py-user");
    assertEquals("from-python", loaded.getAccessToken().getTokenValue());
    assertEquals(OAuth2AccessToken.TokenType.BEARER, loaded.getAccessToken().getTokenType());
    assertEquals(Set.of("a", "b"), loaded.getAccessToken().getScopes());
    assertNull(loaded.getAccessToken().getExpiresAt());
    assertEquals("r-1", loaded.getRefreshToken().getTokenValue());

    Instant now = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
    OAuth2AuthorizedClient withRefresh =
        new OAuth2AuthorizedClient(
            loaded.getClientRegistration(),
            "py-user",
            new OAuth2AccessToken(
                OAuth2AccessToken.TokenType.BEARER, "t-2", now, now.plus(Duration.ofHours(1))),
            new OAuth2RefreshToken("r-2", now));
    one.service.saveAuthorizedClient(
        withRefresh,
        UsernamePasswordAuthenticationToken.authenticated(
            "py-user", null, AuthorityUtils.NO_AUTHORITIES));
    OAuth2AuthorizedClient back =
        one.service.loadAuthorizedClient(OAuthSetup.REGISTRATION, "py-user");
    assertEquals("r-2", back.getRefreshToken().getTokenValue());
    assertEquals(now, back.getRefreshToken().getIssuedAt());
    assertEquals(now.plus(Duration.ofHours(1)), back.getAccessToken().getExpiresAt());
  }

  @Test
  void aMissingUserOrRegistrationIsNullNotAnError() {
    OAuthSetup one = new OAuthSetup(first, auth.uri());
    assertNull(one.service.loadAuthorizedClient(OAuthSetup.REGISTRATION, "nobody"));
    assertNull(one.service.loadAuthorizedClient("no-such-registration", "alice"));
    one.service.removeAuthorizedClient(OAuthSetup.REGISTRATION, "nobody");
    assertThrows(
        IllegalArgumentException.class,
        () -> one.service.loadAuthorizedClient(OAuthSetup.REGISTRATION, ""));
  }

  @Test
  void aTokenAnotherRingSealedIsRefusedClearlyUntilRemoved() {
    OAuthSetup one = new OAuthSetup(first, auth.uri());
    one.authorize("carol");
    String key = "mcp-clients/mcp-server|carol/oauth-tokens";
    String blob = first.stateTool().blocking().get(key, String.class).orElseThrow();
    try (Client other = CLUSTER.get().client(NS + "-other", b -> {})) {
      other.keyRing().blocking().create();
      other.stateTool().blocking().store(key, blob);
      OAuthSetup theirs = new OAuthSetup(other, auth.uri());
      int before = auth.requests();
      SealedFieldException e =
          assertThrows(
              SealedFieldException.class,
              () -> theirs.service.loadAuthorizedClient(OAuthSetup.REGISTRATION, "carol"));
      assertEquals(key, e.key());
      assertTrue(e.getMessage().contains("key ring does not open it"), e.getMessage());
      assertThrows(SealedFieldException.class, () -> theirs.authorize("carol"));
      assertEquals(before, auth.requests(), "signed in anew unasked");
      theirs.service.removeAuthorizedClient(OAuthSetup.REGISTRATION, "carol");
      theirs.authorize("carol");
      assertEquals(before + 1, auth.requests());
    }
  }

  @Test
  void clientKeysAreEscapedAndBounded() {
    assertEquals("mcp-server|alice", ClientKeys.DEFAULT.clientKey("mcp-server", "alice"));
    assertEquals("a%7Cb|c%2Fd%25", ClientKeys.DEFAULT.clientKey("a|b", "c/d%"));
    assertEquals("r|tab%09x", ClientKeys.DEFAULT.clientKey("r", "tab\tx"));
    assertThrows(
        IllegalArgumentException.class, () -> ClientKeys.DEFAULT.clientKey("r", "x".repeat(127)));
    OAuthSetup one = new OAuthSetup(first, auth.uri());
    one.authorize("dave/admin");
    assertTrue(
        first.stateTool().blocking().exists("mcp-clients/mcp-server|dave%2Fadmin/oauth-tokens"));
  }
}
