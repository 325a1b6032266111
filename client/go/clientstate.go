package handlestore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode"
)

// ClientStateStore keeps what an MCP client must remember to survive its
// own restart (session id, access token, negotiated protocol version,
// server capabilities) in the state tool under mcp-clients/<client key>/,
// the keys of the other clients' ClientStateStore. The access token is
// stored encrypted with the replicated key ring (AES-256-GCM, bound to the
// client key and the field), so only holders of the ring read it.
type ClientStateStore struct {
	tool      *StateTool
	codec     *RequestStateCodec
	clientKey string
}

const (
	clientStateRoot    = "mcp-clients"
	fieldSessionID     = "session-id"
	fieldAccessToken   = "access-token"
	fieldProtocol      = "protocol-version"
	fieldCapabilities  = "server-capabilities"
	tokenSealTTL       = 10 * 365 * 24 * time.Hour
	maxClientKeyLength = 128
)

func checkClientKey(key string) error {
	ok := key != "" && len(key) <= maxClientKeyLength && !strings.Contains(key, "/") &&
		!strings.ContainsFunc(key, func(r rune) bool { return unicode.Is(unicode.Cc, r) })
	if !ok {
		return invalid("client key %s must be 1-128 bytes without '/' or control characters", shown(key))
	}
	return nil
}

// NewClientStateStore is the store of one MCP client under clientKey (for
// example the server URL's host and a user id), encrypting with codec
// (which must be SealEncrypted).
func NewClientStateStore(tool *StateTool, codec *RequestStateCodec, clientKey string) (*ClientStateStore, error) {
	if codec.Mode() != SealEncrypted {
		return nil, invalid("the access token needs an encrypting codec (SealEncrypted)")
	}
	if err := checkClientKey(clientKey); err != nil {
		return nil, err
	}
	return &ClientStateStore{tool: tool, codec: codec, clientKey: clientKey}, nil
}

// ClientStateStoreFromCluster is the store in the client's namespace,
// encrypting with its key ring (which must exist: `handlestore keyring
// create`).
func ClientStateStoreFromCluster(ctx context.Context, c *Client, clientKey string) (*ClientStateStore, error) {
	codec, err := RequestStateCodecFromCluster(ctx, c, SealEncrypted, 0)
	if err != nil {
		return nil, err
	}
	return NewClientStateStore(c.StateTool(StateToolOptions{}), codec, clientKey)
}

func (s *ClientStateStore) key(field string) string {
	return clientStateRoot + "/" + s.clientKey + "/" + field
}

func (s *ClientStateStore) text(ctx context.Context, field string) (string, bool, error) {
	e, err := s.tool.Retrieve(ctx, s.key(field))
	if err != nil || e == nil {
		return "", false, err
	}
	var v string
	if e.Value.IsBytes() || json.Unmarshal(e.Value.JSON(), &v) != nil {
		return "", false, nil
	}
	return v, true, nil
}

func (s *ClientStateStore) set(ctx context.Context, field string, v any) error {
	_, err := s.tool.Store(ctx, s.key(field), v)
	return err
}

func (s *ClientStateStore) clear(ctx context.Context, field string) error {
	_, err := s.tool.Delete(ctx, s.key(field))
	return err
}

// SetSessionID stores the session id.
func (s *ClientStateStore) SetSessionID(ctx context.Context, id string) error {
	return s.set(ctx, fieldSessionID, id)
}

// SessionID is the stored session id; false if there is none.
func (s *ClientStateStore) SessionID(ctx context.Context) (string, bool, error) {
	return s.text(ctx, fieldSessionID)
}

// ClearSessionID forgets the session id.
func (s *ClientStateStore) ClearSessionID(ctx context.Context) error {
	return s.clear(ctx, fieldSessionID)
}

// SetSealed stores any JSON value under field, encrypted and bound to this
// client key and the field.
func (s *ClientStateStore) SetSealed(ctx context.Context, field string, v any) error {
	sealed, err := s.codec.Encode(ctx, v, s.clientKey, SealOptions{Tool: field, TTL: tokenSealTTL})
	if err != nil {
		return err
	}
	return s.set(ctx, field, sealed)
}

// Sealed decodes into dst what SetSealed stored under field; false if
// nothing is there, or it no longer decrypts (its key was retired).
func (s *ClientStateStore) Sealed(ctx context.Context, field string, dst any) (bool, error) {
	blob, ok, err := s.text(ctx, field)
	if err != nil || !ok {
		return false, err
	}
	return s.codec.DecodeInto(ctx, blob, s.clientKey, field, dst)
}

// SetAccessToken stores the token encrypted.
func (s *ClientStateStore) SetAccessToken(ctx context.Context, token string) error {
	return s.SetSealed(ctx, fieldAccessToken, token)
}

// AccessToken is the token; false if there is none or it no longer
// decrypts: then the client signs in again.
func (s *ClientStateStore) AccessToken(ctx context.Context) (string, bool, error) {
	var token string
	ok, err := s.Sealed(ctx, fieldAccessToken, &token)
	if errors.Is(err, ErrCodec) {
		return "", false, nil
	}
	return token, ok && err == nil, err
}

// ClearAccessToken forgets the token.
func (s *ClientStateStore) ClearAccessToken(ctx context.Context) error {
	return s.clear(ctx, fieldAccessToken)
}

// SetProtocolVersion stores the negotiated protocol version.
func (s *ClientStateStore) SetProtocolVersion(ctx context.Context, v string) error {
	return s.set(ctx, fieldProtocol, v)
}

// ProtocolVersion is the stored protocol version; false if there is none.
func (s *ClientStateStore) ProtocolVersion(ctx context.Context) (string, bool, error) {
	return s.text(ctx, fieldProtocol)
}

// ClearProtocolVersion forgets the protocol version.
func (s *ClientStateStore) ClearProtocolVersion(ctx context.Context) error {
	return s.clear(ctx, fieldProtocol)
}

// SetServerCapabilities stores the server's capabilities (any JSON).
func (s *ClientStateStore) SetServerCapabilities(ctx context.Context, caps any) error {
	return s.set(ctx, fieldCapabilities, caps)
}

// ServerCapabilities decodes the stored capabilities into dst; false if
// there are none.
func (s *ClientStateStore) ServerCapabilities(ctx context.Context, dst any) (bool, error) {
	return s.tool.Get(ctx, s.key(fieldCapabilities), dst)
}

// ClearServerCapabilities forgets the capabilities.
func (s *ClientStateStore) ClearServerCapabilities(ctx context.Context) error {
	return s.clear(ctx, fieldCapabilities)
}

// Clear forgets everything stored for this client.
func (s *ClientStateStore) Clear(ctx context.Context) error {
	_, err := s.tool.DeletePrefix(ctx, clientStateRoot+"/"+s.clientKey+"/", 100)
	return err
}
