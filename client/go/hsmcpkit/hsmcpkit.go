// Package hsmcpkit is mcpkit's server.HandleStore[T]
// (github.com/panyam/mcpkit, SEP-2567 state handles) on a handlestore
// cluster: an mcpkit server swaps its in-memory store for a replicated
// one in one line,
//
//	carts := server.NewHandleStore[Cart](server.WithHandleIDPrefix("cart"), server.WithHandleDefaultTTL(time.Hour))
//	carts := hsmcpkit.NewHandleStoreFromEnv[Cart]("cart", hsmcpkit.WithHandleIDPrefix("cart"), hsmcpkit.WithHandleDefaultTTL(time.Hour))
//
// (the cluster from HANDLESTORE_ENDPOINTS and the variables of
// handlestore.FromEnv) and every replica then sees every cart. The method
// set is mcpkit's (Mint, Put, Get, Delete, Len, Close), with its TTL rule
// (> 0 that TTL, 0 the store's default, < 0 never), its ids ("<prefix>-"
// and 26 base32 characters) and its promises: Put stores under any id,
// a caller-chosen one too; every call answers after Close. So tool
// handlers do not change. This package does not import mcpkit: it only
// has to have the methods.
//
// That method set has no error, and mcpkit's own example ignores Put's
// bool, so a failed call cannot be told by its value: a call that fails
// (no quorum within Options.Timeout, 5 s by default; the cluster
// refusing) panics with an *OpError, after recording it (Err,
// Options.OnError, else a log/slog record). mcpkit's dispatcher recovers a
// handler's panic into the JSON-RPC error -32603 for that tools/call (on
// its stateless wire, net/http ends the exchange without a response), so
// the MCP client is told the call failed: never that an item was added
// when the write may be lost. A failed Put may still have been applied
// (its outcome is unknown at the deadline): failed means "not known to be
// done", and the client can ask again.
//
// Outside a tool handler (start-up code, a background job) use the
// context-and-error store of the root package, handlestore.HandleStore[T]
// (Underlying gives this store's), or recover: its calls take a context
// (mcpkit's core.ToolContext is a context.Context), return their errors,
// and it offers Update, a compare-and-set read-modify-write (a Get then
// Put, here as in mcpkit, can lose a concurrent update).
//
// The package is named hsmcpkit, not mcpkit, so that it reads as
// handlestore's adapter beside mcpkit's own packages and needs no import
// alias.
package hsmcpkit

import (
	"context"
	"sync/atomic"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// HandleStore is mcpkit's server.HandleStore[T] on a handlestore cluster.
// Safe for concurrent use.
type HandleStore[T any] struct {
	store *handlestore.HandleStore[T]
	opts  Options
	last  atomic.Pointer[OpError]
}

// NewHandleStore is the handle store named store (e.g. "cart") in the
// client's namespace, in mcpkit's shape: it returns the store alone, and
// panics if store or opts.Prefix is not a valid name (A-Z a-z 0-9 _ - .,
// 1-64 bytes), as regexp.MustCompile does for a bad constant; use New for
// names from configuration. The client stays the caller's to close.
func NewHandleStore[T any](c *handlestore.Client, store string, opts Options) *HandleStore[T] {
	s, err := New[T](c, store, opts)
	if err != nil {
		panic(err)
	}
	return s
}

// New is NewHandleStore with the error instead of a panic.
func New[T any](c *handlestore.Client, store string, opts Options) (*HandleStore[T], error) {
	inner, err := handlestore.NewHandleStore[T](c, store, handlestore.HandleStoreOptions{
		Prefix: opts.Prefix, DefaultTTL: opts.DefaultTTL, Consistency: opts.Consistency,
	})
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &HandleStore[T]{store: inner, opts: opts}, nil
}

// Underlying is the context-and-error store this one calls, for new code
// and for what mcpkit's method set lacks (Update, MintWithID,
// GetVersioned, compare-and-set). It takes wire ids: a caller-chosen id
// that is not a handle id is there under WireID's.
func (s *HandleStore[T]) Underlying() *handlestore.HandleStore[T] { return s.store }

// call is a context bounded by the timeout.
func (s *HandleStore[T]) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.Timeout)
}

// Mint stores v under a fresh id and returns the id; it panics if that
// failed. A Mint that failed at its deadline may still have been stored
// under an id nobody learns; it expires with its TTL.
func (s *HandleStore[T]) Mint(v T, ttl time.Duration) string {
	ctx, cancel := s.call()
	defer cancel()
	id, err := s.store.Mint(ctx, v, ttl)
	if err != nil {
		panic(s.failed("mint", "", err))
	}
	return id
}

// Put stores v under id (an upsert, refreshing the TTL by Mint's rule),
// whatever the id (see WireID), and says whether a live handle existed
// before (an expired one did not); it panics if the write failed or its
// outcome is unknown.
func (s *HandleStore[T]) Put(id string, v T, ttl time.Duration) bool {
	ctx, cancel := s.call()
	defer cancel()
	existed, err := s.store.Put(ctx, WireID(id), v, ttl)
	if err != nil {
		panic(s.failed("put", id, err))
	}
	return existed
}

// Get is the value under id, and false if there is none or it expired;
// it panics if the read failed (false would claim the handle is gone).
func (s *HandleStore[T]) Get(id string) (T, bool) {
	ctx, cancel := s.call()
	defer cancel()
	v, ok, err := s.store.Get(ctx, WireID(id))
	if err != nil {
		panic(s.failed("get", id, err))
	}
	return v, ok
}

// Delete deletes the handle and says whether a live one existed; it
// panics if the delete failed or its outcome is unknown.
func (s *HandleStore[T]) Delete(id string) bool {
	ctx, cancel := s.call()
	defer cancel()
	existed, err := s.store.Delete(ctx, WireID(id))
	if err != nil {
		panic(s.failed("delete", id, err))
	}
	return existed
}

// Len is the number of live (unexpired) handles in the store, on every
// replica alike (mcpkit's in-memory store also counts expired ones not yet
// swept, as its docs allow); it panics if the call failed.
func (s *HandleStore[T]) Len() int {
	ctx, cancel := s.call()
	defer cancel()
	n, err := s.store.Len(ctx)
	if err != nil {
		panic(s.failed("len", "", err))
	}
	return n
}

// Close is mcpkit's: it releases what the store holds, which is nothing
// (the client is the caller's, or the process's for NewHandleStoreFromEnv,
// and the handles stay in the cluster), so calls after it answer as
// before, as mcpkit's in-memory store's do. Idempotent.
func (s *HandleStore[T]) Close() {}
