package io.github.handlestore.spring;

import io.github.handlestore.client.Client;
import java.net.URI;
import org.springframework.security.oauth2.client.AuthorizedClientServiceOAuth2AuthorizedClientManager;
import org.springframework.security.oauth2.client.OAuth2AuthorizeRequest;
import org.springframework.security.oauth2.client.OAuth2AuthorizedClient;
import org.springframework.security.oauth2.client.registration.ClientRegistration;
import org.springframework.security.oauth2.client.registration.InMemoryClientRegistrationRepository;
import org.springframework.security.oauth2.core.AuthorizationGrantType;
import org.springframework.security.oauth2.core.ClientAuthenticationMethod;

/**
 * What a Spring application wires, without Spring Boot: a client-credentials registration, the
 * cluster's authorized client service and Spring's manager over it. Shared by the tests and the
 * client process they start.
 */
final class OAuthSetup {
  static final String REGISTRATION = "mcp-server";
  static final String CLIENT_ID = "mcp-client";
  static final String CLIENT_SECRET = "s3cret";

  final InMemoryClientRegistrationRepository registrations;
  final ClusterOAuth2AuthorizedClientService service;
  final AuthorizedClientServiceOAuth2AuthorizedClientManager manager;

  OAuthSetup(Client client, URI tokenUri) {
    registrations = new InMemoryClientRegistrationRepository(registration(tokenUri));
    service = ClusterOAuth2AuthorizedClientService.fromCluster(client, registrations);
    manager = new AuthorizedClientServiceOAuth2AuthorizedClientManager(registrations, service);
  }

  static ClientRegistration registration(URI tokenUri) {
    return ClientRegistration.withRegistrationId(REGISTRATION)
        .clientId(CLIENT_ID)
        .clientSecret(CLIENT_SECRET)
        .clientAuthenticationMethod(ClientAuthenticationMethod.CLIENT_SECRET_BASIC)
        .authorizationGrantType(AuthorizationGrantType.CLIENT_CREDENTIALS)
        .scope("mcp")
        .tokenUri(tokenUri.toString())
        .build();
  }

  /** The manager's authorized client for {@code principal}: stored, or from the token endpoint. */
  OAuth2AuthorizedClient authorize(String principal) {
    return manager.authorize(
        OAuth2AuthorizeRequest.withClientRegistrationId(REGISTRATION).principal(principal).build());
  }
}
