package handlestore

import (
	"bytes"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// Opening sealed request state (requeststate.go has the format): every
// path gives false for anything but a well-formed, authentic, unexpired
// blob for this subject and tool. What opens gives its state and its
// expiry (unix seconds).

func open(keys []derivedKey, blob, subject, tool string, now uint64) ([]byte, uint64, bool) {
	if len(blob) > maxBlobLen {
		return nil, 0, false
	}
	if rest, ok := strings.CutPrefix(blob, encryptedPrefix); ok {
		return openEncrypted(keys, rest, subject, tool, now)
	}
	if rest, ok := strings.CutPrefix(blob, signedPrefix); ok {
		return openSigned(keys, rest, subject, tool, now)
	}
	return nil, 0, false
}

func openSigned(keys []derivedKey, rest, subject, tool string, now uint64) ([]byte, uint64, bool) {
	bodyText, tagText, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, 0, false
	}
	body, err1 := b64.DecodeString(bodyText)
	tag, err2 := b64.DecodeString(tagText)
	if err1 != nil || err2 != nil {
		return nil, 0, false
	}
	for _, k := range keys {
		if hmac.Equal(hmacOf(k.mac, body), tag) {
			if s, exp, ok := accept(k, body, subject, tool, now); ok {
				return s, exp, true
			}
		}
	}
	return nil, 0, false
}

func openEncrypted(keys []derivedKey, rest, subject, tool string, now uint64) ([]byte, uint64, bool) {
	raw, err := b64.DecodeString(rest)
	if err != nil || len(raw) < nonceLen+tagLen {
		return nil, 0, false
	}
	nonce, sealed := raw[:nonceLen], raw[nonceLen:]
	for _, k := range keys {
		gcm, err := newGCM(k.aes)
		if err != nil {
			return nil, 0, false
		}
		bind := hex.EncodeToString(bindTag(k, subject, tool))
		body, err := gcm.Open(nil, nonce, sealed, []byte(bind))
		if err != nil {
			continue
		}
		if s, exp, ok := accept(k, body, subject, tool, now); ok {
			return s, exp, true
		}
	}
	return nil, 0, false
}

// accept checks an authentic payload against the binding and the clock,
// and gives its state and expiry.
func accept(k derivedKey, body []byte, subject, tool string, now uint64) ([]byte, uint64, bool) {
	var p map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if dec.Decode(&p) != nil || dec.More() {
		return nil, 0, false
	}
	s, hasState := p["s"]
	exp, err := strconv.ParseUint(string(p["exp"]), 10, 64)
	var bind string
	if !hasState || err != nil || json.Unmarshal(p["b"], &bind) != nil {
		return nil, 0, false
	}
	tag, err := hex.DecodeString(bind)
	if err != nil || bind != strings.ToLower(bind) || !hmac.Equal(bindTag(k, subject, tool), tag) || now >= exp {
		return nil, 0, false
	}
	return s, exp, true
}
