package hsmcpkit

import (
	"log/slog"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// DefaultTimeout bounds each call when Options.Timeout is zero: long
// enough to ride out a leader election and a failover, short enough that
// a tool call does not hang for the client's own 15 s.
const DefaultTimeout = 5 * time.Second

// Options shape a HandleStore. The zero value is mcpkit's default store:
// no prefix, no default TTL.
type Options struct {
	// Prefix makes minted ids "<prefix>-<26 chars>" (mcpkit's
	// WithHandleIDPrefix).
	Prefix string
	// DefaultTTL is the TTL of a ttl of 0 (0: never expires; mcpkit's
	// WithHandleDefaultTTL). Expiry is the cluster's: there is no GC
	// interval to set.
	DefaultTTL time.Duration
	// Consistency of Get and Len (default Linearizable: a handle minted on
	// one replica is read at once on every other).
	Consistency handlestore.Consistency
	// Timeout bounds each call across its retries and failover (default
	// DefaultTimeout); a call still unanswered then fails (and panics).
	Timeout time.Duration
	// OnError, if set, is called with each failed call's operation
	// ("mint", "put", "get", "delete", "len") and error, before the panic
	// and instead of the log record. It must be safe for concurrent use.
	OnError func(op string, err error)
	// Logger records failures when OnError is nil (nil: slog.Default()).
	Logger *slog.Logger
}

// HandleStoreOption sets an Options field, as mcpkit's
// server.HandleStoreOption does its store's: its three options have
// namesakes here, so a constructor call changes only its package. Write
// your own for the fields without one.
type HandleStoreOption func(*Options)

// WithHandleIDPrefix is mcpkit's: minted ids are "<prefix>-<26 chars>".
func WithHandleIDPrefix(prefix string) HandleStoreOption {
	return func(o *Options) { o.Prefix = prefix }
}

// WithHandleDefaultTTL is mcpkit's: the TTL of a ttl of 0 (0: never
// expires).
func WithHandleDefaultTTL(ttl time.Duration) HandleStoreOption {
	return func(o *Options) { o.DefaultTTL = ttl }
}

// WithHandleGCInterval is mcpkit's, and changes nothing: the cluster
// sweeps expired handles itself, and a Get never sees one.
func WithHandleGCInterval(time.Duration) HandleStoreOption {
	return func(*Options) {}
}

// WithTimeout bounds each call (Options.Timeout).
func WithTimeout(d time.Duration) HandleStoreOption {
	return func(o *Options) { o.Timeout = d }
}
