package hsmcpkit_test

import (
	"time"

	"github.com/handlestore/handlestore/client/go/hsmcpkit"
)

// mcpkitHandleStore is mcpkit's server.HandleStore[T], method for method:
// github.com/panyam/mcpkit, server/handles.go at commit
// caf24e8fdb6b8ce94a7d6bfdb32a074cf2cdb0f9 (the file as last changed in
// b883eca96a4373573c68a3950558e57e04701446). The Go module proxy does not
// serve mcpkit, so this copy stands in for a compile check against it.
// Its rules: a ttl > 0 is that TTL, 0 the store's default (none: never
// expires), < 0 never; Mint's ids are "<prefix>-" and 26 characters of
// RFC 4648 base32 of 128 random bits, no padding; Put is an upsert that
// says whether an entry existed; Get is zero and false for an unknown or
// expired handle; Delete says whether it was present; Close is idempotent.
type mcpkitHandleStore[T any] interface {
	Mint(v T, ttl time.Duration) string
	Put(id string, v T, ttl time.Duration) bool
	Get(id string) (T, bool)
	Delete(id string) bool
	Len() int
	Close()
}

var _ mcpkitHandleStore[Cart] = (*hsmcpkit.HandleStore[Cart])(nil)
