// Package hsmcpkit is mcpkit's server.HandleStore[T]
// (github.com/panyam/mcpkit, SEP-2567 state handles) on a handlestore
// cluster: an mcpkit server swaps its in-memory store for a replicated
// one in one line,
//
//	carts := server.NewHandleStore[Cart](server.WithHandleIDPrefix("cart"), server.WithHandleDefaultTTL(time.Hour))
//	carts := hsmcpkit.NewHandleStore[Cart](client, "cart", hsmcpkit.Options{Prefix: "cart", DefaultTTL: time.Hour})
//
// and every replica then sees every cart. The method set is mcpkit's
// (Mint, Put, Get, Delete, Len, Close), with its TTL rule (> 0 that TTL,
// 0 the store's default, < 0 never) and its ids ("<prefix>-" and 26
// base32 characters), so tool handlers do not change. This package does
// not import mcpkit: it only has to have the methods.
//
// That method set has no context and no error, so each call here runs
// with its own deadline (Options.Timeout, default 5 s) and a failure is
// never a silent wrong answer: the call gives its failure value and the
// error is recorded (Err, Options.OnError, else a log/slog record):
//
//   - Mint gives "": check for it, and fail the tool call (with Err()).
//   - Get gives (zero, false), as for an unknown handle: a handler that
//     answers "unknown cart" may be answering during an outage.
//   - Put and Delete give false; Len gives -1.
//
// An id that is not well-formed names no handle: Get and Delete give
// (zero, false) and false for it without a call and without an error
// (clients send such ids); Put refuses it, recording the error.
//
// New code should use the context-and-error store of the root package,
// handlestore.HandleStore[T] (Underlying gives this store's): its calls
// take the tool call's context (mcpkit's core.ToolContext is a
// context.Context), say why they failed, and offer Update, a
// compare-and-set read-modify-write (a Get then Put here can lose a
// concurrent update).
//
// The package is named hsmcpkit, not mcpkit, so that it reads as
// handlestore's adapter beside mcpkit's own packages and needs no import
// alias.
package hsmcpkit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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
	// DefaultTimeout).
	Timeout time.Duration
	// OnError, if set, is called with each failed call's operation
	// ("mint", "put", "get", "delete", "len") and error, instead of the
	// log record. It must be safe for concurrent use.
	OnError func(op string, err error)
	// Logger records failures when OnError is nil (nil: slog.Default()).
	Logger *slog.Logger
}

// HandleStore is mcpkit's server.HandleStore[T] on a handlestore cluster.
// Safe for concurrent use.
type HandleStore[T any] struct {
	store   *handlestore.HandleStore[T]
	opts    Options
	base    context.Context
	cancel  context.CancelFunc
	last    atomic.Pointer[OpError]
	closing sync.Once
}

// OpError is a failed call: the operation, the store, the handle id ("" for
// Mint and Len) and the cause (errors.Is and errors.As see through it, to
// a *handlestore.Error or a *handlestore.DeadlineError).
type OpError struct {
	Op    string
	Store string
	ID    string
	Err   error
}

func (e *OpError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("hsmcpkit: %s %s: %v", e.Store, e.Op, e.Err)
	}
	return fmt.Sprintf("hsmcpkit: %s %s %s: %v", e.Store, e.Op, e.ID, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// NewHandleStore is the handle store named store (e.g. "cart") in the
// client's namespace, in mcpkit's shape: it returns the store alone, and
// panics if store or opts.Prefix is not a valid name (A-Z a-z 0-9 _ - .,
// 1-64 bytes), as regexp.MustCompile does for a bad constant; use New for
// names from configuration. Closing the store does not close the client.
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
	base, cancel := context.WithCancel(context.Background())
	return &HandleStore[T]{store: inner, opts: opts, base: base, cancel: cancel}, nil
}

// Underlying is the context-and-error store this one calls, for new code
// and for what mcpkit's method set lacks (Update, MintWithID,
// GetVersioned, compare-and-set).
func (s *HandleStore[T]) Underlying() *handlestore.HandleStore[T] { return s.store }

// Err is the error of the latest failed call (an *OpError), nil if none
// has failed. A later success does not clear it.
func (s *HandleStore[T]) Err() error {
	if e := s.last.Load(); e != nil {
		return e
	}
	return nil
}

// call is a context bounded by the timeout, ended by Close.
func (s *HandleStore[T]) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.base, s.opts.Timeout)
}

// failed records a failure: Err, then the hook or the log.
func (s *HandleStore[T]) failed(op, id string, err error) {
	e := &OpError{Op: op, Store: s.store.Store(), ID: id, Err: err}
	s.last.Store(e)
	if s.opts.OnError != nil {
		s.opts.OnError(op, e)
		return
	}
	logger := s.opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// Not the id: holding a handle id is the capability to use it, so ids
	// stay out of logs (Err and the hook have it).
	logger.LogAttrs(context.Background(), slog.LevelError, "handlestore: an mcpkit handle store call failed",
		slog.String("op", op), slog.String("store", e.Store), slog.Any("err", err))
}

// Mint stores v under a fresh id and returns the id; "" if it failed (see
// Err). A Mint that failed at its deadline may still have been stored
// under an id nobody learns; it expires with its TTL.
func (s *HandleStore[T]) Mint(v T, ttl time.Duration) string {
	ctx, cancel := s.call()
	defer cancel()
	id, err := s.store.Mint(ctx, v, ttl)
	if err != nil {
		s.failed("mint", "", err)
		return ""
	}
	return id
}

// Put stores v under id (an upsert, refreshing the TTL by Mint's rule)
// and says whether a live handle existed before; false also if it failed
// (see Err), or if id is not a well-formed handle id (recorded).
func (s *HandleStore[T]) Put(id string, v T, ttl time.Duration) bool {
	ctx, cancel := s.call()
	defer cancel()
	existed, err := s.store.Put(ctx, id, v, ttl)
	if err != nil {
		s.failed("put", id, err)
		return false
	}
	return existed
}

// Get is the value under id, and false if there is none, it expired, or
// the call failed (see Err).
func (s *HandleStore[T]) Get(id string) (T, bool) {
	var zero T
	if handlestore.CheckHandleID(id) != nil {
		return zero, false
	}
	ctx, cancel := s.call()
	defer cancel()
	v, ok, err := s.store.Get(ctx, id)
	if err != nil {
		s.failed("get", id, err)
		return zero, false
	}
	return v, ok
}

// Delete deletes the handle and says whether a live one existed; false
// also if the call failed (see Err).
func (s *HandleStore[T]) Delete(id string) bool {
	if handlestore.CheckHandleID(id) != nil {
		return false
	}
	ctx, cancel := s.call()
	defer cancel()
	existed, err := s.store.Delete(ctx, id)
	if err != nil {
		s.failed("delete", id, err)
		return false
	}
	return existed
}

// Len is the number of live (unexpired) handles in the store, on every
// replica alike; -1 if the call failed (see Err), never a count.
func (s *HandleStore[T]) Len() int {
	ctx, cancel := s.call()
	defer cancel()
	n, err := s.store.Len(ctx)
	if err != nil {
		s.failed("len", "", err)
		return -1
	}
	return n
}

// Close ends the calls in flight and refuses later ones (recorded as
// handlestore.ErrClosed); the handles stay in the cluster and the client
// stays open. Idempotent.
func (s *HandleStore[T]) Close() {
	s.closing.Do(func() {
		s.store.Close()
		s.cancel()
	})
}
