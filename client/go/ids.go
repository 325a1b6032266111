package handlestore

import (
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Handle ids, names and state keys, checked as the node checks them
// (proto/src/id.rs, proto/src/key.rs), so malformed input is refused
// before any call. A handle id is "<prefix>-<26 chars>" or the 26 chars
// alone: 128 CSPRNG bits in RFC 4648 base32 (A-Z, 2-7), no padding, as
// mcpkit's HandleStore mints them.

const (
	// idLen is the length of an id's random part.
	idLen = 26
	// maxNameLen bounds an id prefix, namespace or store name, in bytes.
	maxNameLen = 64
	// maxKeyLen bounds a state key, in bytes.
	maxKeyLen = 1024
)

const base32Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

var idEncoding = base32.NewEncoding(base32Alphabet).WithPadding(base32.NoPadding)

// NewHandleID is a fresh handle id; with a prefix, "<prefix>-<id>".
func NewHandleID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := idEncoding.EncodeToString(b[:])
	if prefix == "" {
		return id
	}
	return prefix + "-" + id
}

// isName: a namespace, store name or id prefix is A-Z a-z 0-9 _ - . (1 to
// maxLen bytes).
func isName(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// shown is s for an error message: quoted, at most 80 characters.
func shown(s string) string {
	r := []rune(s)
	if len(r) > 80 {
		r = r[:80]
	}
	return strconv.Quote(string(r))
}

// CheckHandleID says why id is not a well-formed handle id (nil if it is).
func CheckHandleID(id string) error {
	if id == "" {
		return invalid("handle id must not be empty")
	}
	if len(id) > maxNameLen+1+idLen {
		return invalid("handle id %s... is too long", shown(id))
	}
	random := id
	if len(id) > idLen && id[len(id)-idLen-1] == '-' {
		prefix := id[:len(id)-idLen-1]
		random = id[len(id)-idLen:]
		if !isName(prefix, maxNameLen) {
			return invalid("handle id %s has an invalid prefix (A-Z a-z 0-9 _ - . only)", shown(id))
		}
	}
	if !isRandomPart(random) {
		return invalid("handle id %s is malformed: expected 26 base32 characters (A-Z, 2-7), optionally after \"<prefix>-\"", shown(id))
	}
	return nil
}

// isRandomPart: 26 base32 characters carrying 128 bits (the last one's two
// low bits are zero).
func isRandomPart(s string) bool {
	if len(s) != idLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(base32Alphabet, s[i]) < 0 {
			return false
		}
	}
	return strings.IndexByte(base32Alphabet, s[idLen-1])&3 == 0
}

func checkCommon(what, s string) error {
	if len(s) > maxKeyLen {
		return invalid("%s is %d bytes; the limit is %d", what, len(s), maxKeyLen)
	}
	if !utf8.ValidString(s) {
		return invalid("%s %s is not UTF-8", what, shown(s))
	}
	for _, r := range s {
		if unicode.Is(unicode.Cc, r) {
			return invalid("%s %s contains a control character", what, shown(s))
		}
	}
	return nil
}

// CheckKey says why key is not a well-formed state key (non-empty, UTF-8,
// no control characters, no empty segment), nil if it is one.
func CheckKey(key string) error {
	if key == "" {
		return invalid("key must not be empty")
	}
	if err := checkCommon("key", key); err != nil {
		return err
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" {
			return invalid("key %s has an empty segment (no leading, trailing or doubled '/')", shown(key))
		}
	}
	return nil
}

// CheckPrefix says why prefix is not a well-formed key prefix ("" is every
// key), nil if it is one.
func CheckPrefix(prefix string) error {
	return checkCommon("prefix", prefix)
}

func checkStore(store string) error {
	if !isName(store, maxNameLen) {
		return invalid("store name %s may only contain A-Z a-z 0-9 _ - . (1-64 bytes)", shown(store))
	}
	return nil
}
