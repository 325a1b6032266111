package mcpkit

import (
	"crypto/rand"
	"encoding/base32"
	"sync"
	"time"
)

// HandleStore is the method set of mcpkit's server.HandleStore[T], the
// interface an mcpkit server's tools are written against and the drop-in
// must satisfy.
type HandleStore[T any] interface {
	Mint(v T, ttl time.Duration) string
	Put(id string, v T, ttl time.Duration) bool
	Get(id string) (T, bool)
	Delete(id string) bool
	Len() int
	Close()
}

// Store models how mcpkit's in-memory store (server.NewHandleStore with
// no default TTL and no sweep; server/handles.go at the commit in the
// package doc) answers, for the comparison in hsmcpkit's tests. It is a
// model written from that behaviour, not mcpkit's code:
//
//   - Mint's id is prefix + "-" + 26 characters of unpadded RFC 4648
//     base32 of 128 random bits (mcpkit leaves the "-" out when there is
//     no prefix; the comparison always has one).
//   - A ttl > 0 expires the entry after ttl; 0 (the store's default,
//     which is none) and < 0 never expire it.
//   - Put stores v either way and says whether an entry was there, an
//     expired one still counting until something removes it.
//   - Get removes an expired entry and answers as for an unknown id.
//   - Len counts expired entries not yet removed.
//   - Close has nothing to release; every call keeps answering after it.
type Store[T any] struct {
	prefix string

	mu      sync.Mutex
	entries map[string]entry[T]
}

type entry[T any] struct {
	v       T
	expires time.Time // zero: never
}

var _ HandleStore[int] = (*Store[int])(nil)

// NewStore is an empty store minting ids under prefix.
func NewStore[T any](prefix string) *Store[T] {
	return &Store[T]{prefix: prefix, entries: map[string]entry[T]{}}
}

// Mint stores v under a new random id.
func (s *Store[T]) Mint(v T, ttl time.Duration) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand, Go 1.24 on)
	id := s.prefix + "-" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw[:])
	s.Put(id, v, ttl)
	return id
}

// Put is an upsert; it says whether id had an entry, expired or not.
func (s *Store[T]) Put(id string, v T, ttl time.Duration) bool {
	e := entry[T]{v: v}
	if ttl > 0 {
		e.expires = time.Now().Add(ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, had := s.entries[id]
	s.entries[id] = e
	return had
}

// Get is id's value, if it has one that has not expired.
func (s *Store[T]) Get(id string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if ok && !e.expires.IsZero() && time.Now().After(e.expires) {
		delete(s.entries, id)
		ok = false
	}
	if !ok {
		var zero T
		return zero, false
	}
	return e.v, true
}

// Delete removes id's entry and says whether there was one.
func (s *Store[T]) Delete(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, had := s.entries[id]
	delete(s.entries, id)
	return had
}

// Len counts the entries, expired ones not yet removed among them.
func (s *Store[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Close does nothing: the modelled store has no sweep to stop.
func (*Store[T]) Close() {}
