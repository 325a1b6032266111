package io.github.handlestore.spring;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.ClientStateStore;
import io.github.handlestore.client.RequestStateCodec;
import io.github.handlestore.client.SealMode;
import io.github.handlestore.client.SealedFieldException;
import io.github.handlestore.client.StateTool;
import io.github.handlestore.client.internal.Futures;
import java.util.Objects;
import org.springframework.security.core.Authentication;
import org.springframework.security.oauth2.client.OAuth2AuthorizedClient;
import org.springframework.security.oauth2.client.OAuth2AuthorizedClientService;
import org.springframework.security.oauth2.client.registration.ClientRegistration;
import org.springframework.security.oauth2.client.registration.ClientRegistrationRepository;
import org.springframework.util.Assert;

/**
 * Spring Security's {@link OAuth2AuthorizedClientService} in the cluster's client state store: the
 * tokens of each authorized client (access token, expiry, scopes, refresh token) under {@code
 * mcp-clients/<client key>/oauth-tokens}, encrypted with the namespace's key ring (AES-256-GCM,
 * bound to the client key and the field), in the layout the Python, TypeScript and Go adapters
 * share. Give it to {@code AuthorizedClientServiceOAuth2AuthorizedClientManager} (or anything that
 * takes the service): a restarted process, or another machine's, finds the token the first one got
 * and makes no new token request while it is good; a token one of them refreshes is the one all
 * use. Only holders of the ring read the tokens.
 *
 * <p>As Spring's JDBC service, stored tokens this process cannot use are refused out loud: a token
 * the ring does not open (sealed by another cluster's or namespace's ring, or with a retired key)
 * fails {@link #loadAuthorizedClient} with {@link SealedFieldException}; {@link
 * #removeAuthorizedClient} clears it, and the next authorization signs in anew. A principal with
 * nothing stored, or a registration the repository does not know, loads as {@code null}.
 */
public final class ClusterOAuth2AuthorizedClientService implements OAuth2AuthorizedClientService {
  /** The client state field of the tokens (the other languages' adapters use the same). */
  public static final String TOKENS_FIELD = "oauth-tokens";

  private final StateTool tool;
  private final RequestStateCodec codec;
  private final ClientRegistrationRepository registrations;
  private final ClientKeys keys;

  /**
   * Tokens in {@code tool}, sealed with {@code codec} (which must encrypt), for the registrations
   * of {@code registrations}, named by {@code keys}.
   */
  public ClusterOAuth2AuthorizedClientService(
      StateTool tool,
      RequestStateCodec codec,
      ClientRegistrationRepository registrations,
      ClientKeys keys) {
    Assert.isTrue(codec.mode() == SealMode.ENCRYPTED, "the tokens need an encrypting codec");
    this.tool = Objects.requireNonNull(tool, "tool");
    this.codec = codec;
    this.registrations = Objects.requireNonNull(registrations, "registrations");
    this.keys = Objects.requireNonNull(keys, "keys");
  }

  /**
   * The service in {@code client}'s namespace, sealing with its key ring (which must exist: {@code
   * handlestore keyring create}), with the {@link ClientKeys#DEFAULT} keys. Waits for the ring.
   */
  public static ClusterOAuth2AuthorizedClientService fromCluster(
      Client client, ClientRegistrationRepository registrations) {
    RequestStateCodec codec =
        Futures.await(RequestStateCodec.fromCluster(client, SealMode.ENCRYPTED));
    return new ClusterOAuth2AuthorizedClientService(
        client.stateTool(), codec, registrations, ClientKeys.DEFAULT);
  }

  /** This service naming clients with {@code keys}. */
  public ClusterOAuth2AuthorizedClientService withClientKeys(ClientKeys keys) {
    return new ClusterOAuth2AuthorizedClientService(tool, codec, registrations, keys);
  }

  /** The client key of {@code principalName}'s client for {@code registrationId}. */
  public String clientKey(String registrationId, String principalName) {
    Assert.hasText(registrationId, "clientRegistrationId cannot be empty");
    Assert.hasText(principalName, "principalName cannot be empty");
    return keys.clientKey(registrationId, principalName);
  }

  /**
   * The client state of {@code principalName}'s client for {@code registrationId}: where its MCP
   * client keeps its session and server metadata beside these tokens.
   */
  public ClientStateStore clientState(String registrationId, String principalName) {
    return new ClientStateStore(tool, codec, clientKey(registrationId, principalName));
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T extends OAuth2AuthorizedClient> T loadAuthorizedClient(
      String clientRegistrationId, String principalName) {
    ClientStateStore state = clientState(clientRegistrationId, principalName);
    ClientRegistration registration = registrations.findByRegistrationId(clientRegistrationId);
    if (registration == null) {
      return null;
    }
    return (T)
        state
            .blocking()
            .openSealed(TOKENS_FIELD, StoredOAuthTokens.class)
            .map(tokens -> tokens.toClient(registration, principalName))
            .orElse(null);
  }

  @Override
  public void saveAuthorizedClient(
      OAuth2AuthorizedClient authorizedClient, Authentication principal) {
    Assert.notNull(authorizedClient, "authorizedClient cannot be null");
    Assert.notNull(principal, "principal cannot be null");
    clientState(authorizedClient.getClientRegistration().getRegistrationId(), principal.getName())
        .blocking()
        .setSealed(TOKENS_FIELD, StoredOAuthTokens.of(authorizedClient));
  }

  @Override
  public void removeAuthorizedClient(String clientRegistrationId, String principalName) {
    clientState(clientRegistrationId, principalName).blocking().clearField(TOKENS_FIELD);
  }
}
