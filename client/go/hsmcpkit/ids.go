package hsmcpkit

import (
	"crypto/sha256"
	"encoding/base32"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// namedPrefix is the prefix of the wire ids of caller-chosen ids.
const namedPrefix = "named"

var wireEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// WireID is the handle id the cluster keeps id under. A handle id (what
// Mint gives, "<prefix>-" and 26 base32 characters) is its own. Any other
// string, which mcpkit's Put stores too ("a deterministic id derived from
// input"), is mapped, the same on every replica, to "named-" and the
// base32 of the first 128 bits of SHA-256("hsmcpkit:" + id): the node
// keeps only well-formed handle ids. Another client reaches such a handle
// under its WireID.
func WireID(id string) string {
	if handlestore.CheckHandleID(id) == nil {
		return id
	}
	sum := sha256.Sum256([]byte("hsmcpkit:" + id))
	return namedPrefix + "-" + wireEncoding.EncodeToString(sum[:16])
}
