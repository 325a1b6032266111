package io.github.handlestore.mcpclient;

import io.github.handlestore.client.ClientStateStore;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/** {@link AccessTokenSource#of(ClientStateStore)}: the store's sealed access-token field. */
final class StoredAccessToken implements AccessTokenSource {
  private final ClientStateStore store;

  StoredAccessToken(ClientStateStore store) {
    this.store = Objects.requireNonNull(store, "store");
  }

  @Override
  public CompletableFuture<Optional<String>> accessToken() {
    return store.openSealed(ClientStateStore.ACCESS_TOKEN, String.class);
  }

  /** Clears the token if it is still the stored one (another process may have saved a new one). */
  @Override
  public CompletableFuture<Boolean> refused(String token) {
    return accessToken()
        .exceptionally(e -> Optional.empty())
        .thenCompose(
            stored ->
                stored.isPresent() && stored.get().equals(token)
                    ? store.clearAccessToken().thenApply(v -> false)
                    : CompletableFuture.completedFuture(stored.isPresent()));
  }
}
