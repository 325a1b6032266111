package mcpevents

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
)

// Key naming shared with the Rust, Python and TypeScript adapters
// (client/ts/src/mcp/keys.ts, proto/src/key.rs).

var digestEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// Digest names a key after any string (a stream id, a session id): the
// first 128 bits of its SHA-256, base32 without padding (26 characters), so
// the key is valid whatever the string and reveals nothing of it.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return digestEncoding.EncodeToString(sum[:16])
}

// PageTokenAfter is the list page token that continues after key.
func PageTokenAfter(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(key))
}

// padded is n as a fixed-width decimal, so keys sort in number order.
func padded(n uint64, width int) string {
	return fmt.Sprintf("%0*d", width, n)
}

// maxSeq is the largest sequence number an event id carries (the other
// clients' safe integers).
const maxSeq = 1<<53 - 1

// eventID: the token (26 base32 characters) and the sequence number in
// digits without leading zeros, so each event has exactly one id.
var eventID = regexp.MustCompile(`^([A-Z2-7]{26})\.(0|[1-9][0-9]{0,15})$`)

// FormatEventID is the id of event seq of the stream with token:
// "<token>.<seq>", as the other clients' event stores mint them.
func FormatEventID(token string, seq uint64) string {
	return token + "." + strconv.FormatUint(seq, 10)
}

// ParseEventID is the token and sequence number of an id FormatEventID
// made; false for anything else (a Last-Event-ID is whatever a client
// sends).
func ParseEventID(id string) (token string, seq uint64, ok bool) {
	m := eventID.FindStringSubmatch(id)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.ParseUint(m[2], 10, 64)
	if err != nil || n > maxSeq {
		return "", 0, false
	}
	return m[1], n, true
}

// Shown is s for an error message: quoted, at most 80 characters.
func Shown(s string) string {
	r := []rune(s)
	if len(r) > 80 {
		r = r[:80]
	}
	return strconv.Quote(string(r))
}
