package mcpgo

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/client/transport"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// TokensField is the client state field the tokens are kept in: the one
// the Python package's ClusterTokenStorage and the TypeScript
// ClusterOAuthClientProvider use, so a sign-in is shared with them.
const TokensField = "oauth-tokens"

// TokenStore is mcp-go's client transport.TokenStore on the cluster: the
// OAuth token (access and refresh token, expiry) of one client, kept in
// its ClientStateStore under mcp-clients/<client key>/oauth-tokens,
// encrypted with the namespace's key ring (AES-256-GCM, bound to the
// client key and the field), so every instance of the client, and one
// restarted, uses the token any of them saved; only holders of the ring
// can read it. Set it as OAuthConfig.TokenStore.
type TokenStore struct {
	state *handlestore.ClientStateStore
}

var _ transport.TokenStore = (*TokenStore)(nil)

// NewTokenStore keeps the token in state.
func NewTokenStore(state *handlestore.ClientStateStore) *TokenStore {
	return &TokenStore{state: state}
}

// TokenStoreFromCluster keeps the token of clientKey in c's namespace,
// encrypted with its key ring (which must exist: `handlestore keyring
// create`, or Client.KeyringRotate(ctx, true)).
func TokenStoreFromCluster(ctx context.Context, c *handlestore.Client, clientKey string) (*TokenStore, error) {
	state, err := handlestore.ClientStateStoreFromCluster(ctx, c, clientKey)
	if err != nil {
		return nil, err
	}
	return NewTokenStore(state), nil
}

// GetToken implements transport.TokenStore: the saved token, or
// transport.ErrNoToken if there is none or it no longer decrypts (its key
// was retired: the client signs in again); ctx's error once it is done.
func (s *TokenStore) GetToken(ctx context.Context) (*transport.Token, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var token transport.Token
	ok, err := s.state.Sealed(ctx, TokensField, &token)
	switch {
	case errors.Is(err, handlestore.ErrCodec):
		return nil, fmt.Errorf("%w: the saved token does not decode: %v", transport.ErrNoToken, err)
	case err != nil:
		return nil, err
	case !ok:
		return nil, transport.ErrNoToken
	}
	return &token, nil
}

// SaveToken implements transport.TokenStore: the token replaces the saved
// one, for every instance of the client; ctx's error once it is done.
func (s *TokenStore) SaveToken(ctx context.Context, token *transport.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if token == nil {
		return fmt.Errorf("mcpgo: no token to save: %w", handlestore.ErrInvalidArgument)
	}
	return s.state.SetSealed(ctx, TokensField, token)
}
