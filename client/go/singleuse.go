package handlestore

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"time"
)

// Single use across replicas: SEP-2322 says the one-time redemption of
// MRTR requestState MUST be enforced by the server, and with several
// replicas "this replica has seen it" is not enough. A redemption is a
// create-only mint (MintWithID) of a handle whose id is derived from the
// token (RedeemedID), in the store the Rust, Python and TypeScript clients
// use, so replicas in any of the languages refuse each other's redeemed
// tokens (the shared vectors' "redemptions" hold the ids). It is
// replicated like every write: a failover never forgets it, and a retry
// applies it once.

// RedeemedStore is the handle store redemptions go to, in the client's
// namespace.
const RedeemedStore = "mcp-redeemed"

// minRedeemTTL is the shortest a redemption is kept.
const minRedeemTTL = time.Second

// SingleUse redeems tokens once across every replica. Safe for concurrent
// use.
type SingleUse struct {
	store *HandleStore[bool]
}

// NewSingleUse records redemptions in c's namespace (store RedeemedStore).
func NewSingleUse(c *Client) *SingleUse {
	store, err := NewHandleStore[bool](c, RedeemedStore, HandleStoreOptions{})
	if err != nil {
		panic(err) // RedeemedStore is a valid store name
	}
	return &SingleUse{store: store}
}

// RedeemedID is the handle id token is redeemed under: RFC 4648 base32
// (upper case, no padding) of the first 16 bytes of its SHA-256.
func RedeemedID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return idEncoding.EncodeToString(sum[:16])
}

// Redeem redeems token: true if this was its first redemption anywhere,
// false if it was redeemed before. The record is kept for ttl (at least a
// second): give the token's remaining lifetime, after which it is refused
// anyway. An error leaves the outcome unknown: treat the token as not
// redeemed by this call (fail closed).
func (s *SingleUse) Redeem(ctx context.Context, token string, ttl time.Duration) (bool, error) {
	_, err := s.store.MintWithID(ctx, RedeemedID(token), true, max(ttl, minRedeemTTL))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrAlreadyExists):
		return false, nil
	}
	return false, err
}

// redeemOpened redeems a blob that opened, kept until a second past its
// expiry exp (unix seconds); false (logged) if it cannot be recorded.
func (s *SingleUse) redeemOpened(ctx context.Context, blob string, exp, now uint64) bool {
	left := time.Duration(exp-now+1) * time.Second
	first, err := s.Redeem(ctx, blob, left)
	if err != nil {
		slog.WarnContext(ctx, "handlestore: request state refused: its redemption could not be recorded", "err", err)
		return false
	}
	return first
}

// WithSingleUse makes every blob single-use across the cluster: Decode
// then opens a blob only the first time, on any replica (SEP-2322's
// one-time redemption), and refuses it when the redemption cannot be
// recorded (fail closed; logged with log/slog). Nil turns it off. It
// returns c.
func (c *RequestStateCodec) WithSingleUse(s *SingleUse) *RequestStateCodec {
	c.singleUse.Store(s)
	return c
}
