package handlestore

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RequestStateCodec seals MCP request state (MRTR requestState) so that any
// replica, in any of the client languages, opens what another sealed, with
// keys from the cluster's replicated key ring. The format is the Rust
// crate's (client/rust/src/request_state.rs), checked by the shared vectors:
//
//   - signed: "v1." b64(payload) "." b64(HMAC-SHA256(macKey, payload))
//   - encrypted: "v1e." b64(nonce[12] ‖ ciphertext ‖ tag[16]), AES-256-GCM
//     with the bind tag as associated data
//
// (b64: base64url without padding.) The payload is {"s":<state>,
// "exp":<unix seconds>,"b":<bind tag hex>} with the state as serde_json
// writes it (canonicaljson.go); the bind tag is HMAC-SHA256(macKey,
// subject), or of subject ‖ 0x00 ‖ tool. macKey and aesKey come from each
// ring key by HKDF-SHA256 (no salt; info handlestore/request-state/v1/mac
// and .../aes).
//
// Opening fails closed: a bad MAC or tag, an expired blob, another subject
// or tool, or any malformed input gives false, never an error. Every key of
// the ring is tried (blobs carry no key id), so a blob stays valid across
// rotations until its key is retired. With WithSingleUse, a blob opens once
// in the whole cluster (SEP-2322's one-time redemption).
type RequestStateCodec struct {
	mode         SealMode
	client       *Client
	refreshEvery time.Duration
	singleUse    atomic.Pointer[SingleUse]

	mu      sync.Mutex
	keys    []derivedKey
	fetched time.Time
}

// SealMode: SealSigned (readable by the client, tamper-proof) or
// SealEncrypted (also confidential).
type SealMode int

const (
	SealSigned SealMode = iota
	SealEncrypted
)

const (
	signedPrefix    = "v1."
	encryptedPrefix = "v1e."
	nonceLen        = 12
	tagLen          = 16
	// maxBlobLen is the longest blob opening looks at.
	maxBlobLen = 64 << 10
	// defaultSealTTL is how long a sealed blob stays valid by default.
	defaultSealTTL = 10 * time.Minute
)

var b64 = base64.RawURLEncoding.Strict()

type derivedKey struct {
	primary  bool
	mac, aes []byte
}

func derive(k RingKey) (derivedKey, error) {
	if len(k.Secret) < 32 {
		return derivedKey{}, invalid("key %s has no 32-byte secret", k.ID)
	}
	mac, err := hkdf.Key(sha256.New, k.Secret, nil, "handlestore/request-state/v1/mac", 32)
	if err != nil {
		return derivedKey{}, err
	}
	aesKey, err := hkdf.Key(sha256.New, k.Secret, nil, "handlestore/request-state/v1/aes", 32)
	if err != nil {
		return derivedKey{}, err
	}
	return derivedKey{primary: k.Primary, mac: mac, aes: aesKey}, nil
}

func deriveAll(keys []RingKey) ([]derivedKey, error) {
	out := make([]derivedKey, len(keys))
	for i, k := range keys {
		d, err := derive(k)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// NewRequestStateCodec is a codec over fixed keys (tests, one process).
func NewRequestStateCodec(keys []RingKey, mode SealMode) (*RequestStateCodec, error) {
	d, err := deriveAll(keys)
	if err != nil {
		return nil, err
	}
	return &RequestStateCodec{mode: mode, keys: d}, nil
}

// RequestStateCodecFromCluster is a codec over the replicated key ring of
// the client's namespace (ErrNotFound if it has none yet: `handlestore
// keyring create`), re-read every refreshEvery (0: 10 s) and at once (at
// most once a second) when a blob opens under no cached key.
func RequestStateCodecFromCluster(ctx context.Context, c *Client, mode SealMode, refreshEvery time.Duration) (*RequestStateCodec, error) {
	keys, err := c.Keyring(ctx, true)
	if err != nil {
		return nil, err
	}
	if !hasPrimary(keys) {
		return nil, refusal(ReasonNotFound, "namespace %s has no key ring: run `handlestore keyring create`", c.namespace)
	}
	codec, err := NewRequestStateCodec(keys, mode)
	if err != nil {
		return nil, err
	}
	if refreshEvery <= 0 {
		refreshEvery = 10 * time.Second
	}
	codec.client, codec.refreshEvery, codec.fetched = c, refreshEvery, time.Now()
	return codec, nil
}

func hasPrimary(keys []RingKey) bool {
	for _, k := range keys {
		if k.Primary {
			return true
		}
	}
	return false
}

// Mode is how this codec seals.
func (c *RequestStateCodec) Mode() SealMode { return c.mode }

// Refresh re-reads the ring from the cluster now (nothing for fixed keys).
func (c *RequestStateCodec) Refresh(ctx context.Context) error {
	if c.client == nil {
		return nil
	}
	keys, err := c.client.Keyring(ctx, true)
	if err != nil {
		return err
	}
	d, err := deriveAll(keys)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.keys, c.fetched = d, time.Now()
	c.mu.Unlock()
	return nil
}

// current is the cached ring and its age.
func (c *RequestStateCodec) current() ([]derivedKey, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys, time.Since(c.fetched)
}

// freshKeys is the ring, re-read once it is older than the refresh
// interval (the cached one serves until the cluster answers again).
func (c *RequestStateCodec) freshKeys(ctx context.Context) []derivedKey {
	if keys, age := c.current(); c.client == nil || age < c.refreshEvery {
		return keys
	}
	_ = c.Refresh(ctx)
	keys, _ := c.current()
	return keys
}

// SealOptions shape an Encode.
type SealOptions struct {
	// Tool also binds the blob to this tool ("" binds the subject only).
	Tool string
	// TTL is how long the blob stays valid (default 10 minutes, at least a
	// second).
	TTL time.Duration
}

// Encode seals state (any JSON value) for subject (and opts.Tool).
func (c *RequestStateCodec) Encode(ctx context.Context, state any, subject string, opts SealOptions) (string, error) {
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = defaultSealTTL
	}
	exp := time.Now().Unix() + max(int64(ttl/time.Second), 1)
	return seal(c.freshKeys(ctx), c.mode, state, subject, opts.Tool, uint64(exp), nil)
}

// Decode opens a blob sealed for subject (and tool): the state's JSON, and
// false if it is forged, tampered with, expired, for someone else or
// malformed, and with WithSingleUse, if it was opened before anywhere or
// its redemption could not be recorded.
func (c *RequestStateCodec) Decode(ctx context.Context, blob, subject, tool string) ([]byte, bool) {
	now := uint64(time.Now().Unix())
	s, exp, ok := c.openFresh(ctx, blob, subject, tool, now)
	single := c.singleUse.Load()
	if !ok || single == nil {
		return s, ok
	}
	if !single.redeemOpened(ctx, blob, exp, now) {
		return nil, false
	}
	return s, true
}

// openFresh opens with the ring as re-read every refresh interval, and
// once more at once (at most once a second) when no cached key opens it.
func (c *RequestStateCodec) openFresh(ctx context.Context, blob, subject, tool string, now uint64) ([]byte, uint64, bool) {
	// A retired key stops opening within one interval, also on a replica
	// that only opens.
	if s, exp, ok := open(c.freshKeys(ctx), blob, subject, tool, now); ok {
		return s, exp, true
	}
	if _, age := c.current(); c.client == nil || age < time.Second {
		return nil, 0, false
	}
	if c.Refresh(ctx) != nil {
		return nil, 0, false
	}
	keys, _ := c.current()
	return open(keys, blob, subject, tool, now)
}

// DecodeInto opens a blob into dst; false if it does not open.
func (c *RequestStateCodec) DecodeInto(ctx context.Context, blob, subject, tool string, dst any) (bool, error) {
	raw, ok := c.Decode(ctx, blob, subject, tool)
	if !ok {
		return false, nil
	}
	return true, jsonValue(raw, dst)
}

// EncodeAt seals at a given expiry (unix seconds) and nonce (nil: random):
// for test vectors.
func (c *RequestStateCodec) EncodeAt(state any, subject, tool string, exp uint64, nonce []byte) (string, error) {
	keys, _ := c.current()
	return seal(keys, c.mode, state, subject, tool, exp, nonce)
}

// DecodeAt opens at a given time (unix seconds): for test vectors. It
// does not redeem.
func (c *RequestStateCodec) DecodeAt(blob, subject, tool string, now uint64) ([]byte, bool) {
	keys, _ := c.current()
	s, _, ok := open(keys, blob, subject, tool, now)
	return s, ok
}

func hmacOf(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func bindTag(k derivedKey, subject, tool string) []byte {
	if tool == "" {
		return hmacOf(k.mac, []byte(subject))
	}
	return hmacOf(k.mac, []byte(subject), []byte{0}, []byte(tool))
}

func payload(state []byte, exp uint64, bind string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"s":`)
	b.Write(state)
	b.WriteString(`,"exp":` + strconv.FormatUint(exp, 10) + `,"b":"` + bind + `"}`)
	return b.Bytes()
}

func seal(keys []derivedKey, mode SealMode, state any, subject, tool string, exp uint64, nonce []byte) (string, error) {
	var key *derivedKey
	for i := range keys {
		if keys[i].primary {
			key = &keys[i]
			break
		}
	}
	if key == nil {
		return "", refusal(ReasonNotFound, "the key ring has no primary key")
	}
	s, err := canonicalJSON(state)
	if err != nil {
		return "", err
	}
	bind := hex.EncodeToString(bindTag(*key, subject, tool))
	body := payload(s, exp, bind)
	if mode == SealSigned {
		return signedPrefix + b64.EncodeToString(body) + "." + b64.EncodeToString(hmacOf(key.mac, body)), nil
	}
	return sealEncrypted(*key, body, bind, nonce)
}

func sealEncrypted(key derivedKey, body []byte, bind string, nonce []byte) (string, error) {
	gcm, err := newGCM(key.aes)
	if err != nil {
		return "", err
	}
	if nonce == nil {
		nonce = make([]byte, nonceLen)
		_, _ = rand.Read(nonce)
	}
	if len(nonce) != nonceLen {
		return "", invalid("a nonce is %d bytes", nonceLen)
	}
	out := gcm.Seal(append([]byte{}, nonce...), nonce, body, []byte(bind))
	return encryptedPrefix + b64.EncodeToString(out), nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
