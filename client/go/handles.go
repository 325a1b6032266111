package handlestore

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// HandleStore is a replicated store of opaque handles (a cart, a job, a
// draft) named by kind, with values of type T as JSON and mcpkit's
// HandleStore semantics: Mint, Put, Get, Delete, Len, and Update as a
// compare-and-set loop. TTLs follow the rule of ttl.go (> 0 that TTL, 0
// the store's default, < 0 never). Safe for concurrent use; a handle
// minted through one client is read from any other, on any node.
type HandleStore[T any] struct {
	client      *Client
	store       string
	prefix      string
	defaultTTL  time.Duration
	consistency Consistency
	closed      *atomic.Bool
}

// HandleStoreOptions shape a HandleStore.
type HandleStoreOptions struct {
	// Prefix makes minted ids "<prefix>-<26 chars>".
	Prefix string
	// DefaultTTL is the TTL of writes with TTLDefault (0: never expires).
	DefaultTTL time.Duration
	// Consistency of Get and Len (default Linearizable).
	Consistency Consistency
}

// Versioned is a value with its revisions, for compare-and-set.
type Versioned[T any] struct {
	Value          T
	CreateRevision uint64
	ModRevision    uint64
	// ExpiresAt is when the handle expires (zero: never).
	ExpiresAt time.Time
}

// WriteOutcome is what a write did (see Outcome).
type WriteOutcome struct {
	// Existed: a live handle (or key) existed before.
	Existed bool
	// Revision of the write (for AtLeast reads).
	Revision uint64
}

// NewHandleStore is the handle store named store (e.g. "cart") in the
// client's namespace.
func NewHandleStore[T any](c *Client, store string, opts HandleStoreOptions) (*HandleStore[T], error) {
	if err := checkStore(store); err != nil {
		return nil, err
	}
	if opts.Prefix != "" && !isName(opts.Prefix, maxNameLen) {
		return nil, invalid("id prefix %s may only contain A-Z a-z 0-9 _ - . (1-64 bytes)", shown(opts.Prefix))
	}
	return &HandleStore[T]{
		client: c, store: store, prefix: opts.Prefix, defaultTTL: opts.DefaultTTL,
		consistency: opts.Consistency, closed: &atomic.Bool{},
	}, nil
}

// WithConsistency is the same store read with another consistency.
func (s *HandleStore[T]) WithConsistency(c Consistency) *HandleStore[T] {
	other := *s
	other.consistency = c
	return &other
}

// Store is the store's name.
func (s *HandleStore[T]) Store() string { return s.store }

// Close refuses further calls on this store (the client stays open).
func (s *HandleStore[T]) Close() { s.closed.Store(true) }

func (s *HandleStore[T]) check(id string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return CheckHandleID(id)
}

// Mint stores v under a fresh id and returns the id.
func (s *HandleStore[T]) Mint(ctx context.Context, v T, ttl time.Duration) (string, error) {
	id := NewHandleID(s.prefix)
	if _, err := s.MintWithID(ctx, id, v, ttl); err != nil {
		return "", err
	}
	return id, nil
}

// MintWithID mints under a caller-chosen id (ErrAlreadyExists if it is
// live under another write).
func (s *HandleStore[T]) MintWithID(ctx context.Context, id string, v T, ttl time.Duration) (WriteOutcome, error) {
	if err := s.check(id); err != nil {
		return WriteOutcome{}, err
	}
	raw, err := jsonText(v)
	if err != nil {
		return WriteOutcome{}, err
	}
	res, err := s.client.write(ctx, func(w *pb.WriteId) *pb.Write {
		return &pb.Write{Op: &pb.Write_Mint{Mint: &pb.MintRequest{
			Namespace: s.client.namespace, Store: s.store, Id: id, Value: raw,
			Ttl: wireTTL(ttl, s.defaultTTL, false), WriteId: w,
		}}}
	})
	if err != nil {
		return WriteOutcome{}, err
	}
	if res.GetMint() == nil {
		return WriteOutcome{}, unexpected("mint", res.GetResult())
	}
	return WriteOutcome{Revision: res.GetMint().GetRevision()}, nil
}

// Put is an upsert; it says whether a live handle existed before. With
// IfRevision it is a compare-and-set (ErrRevisionMismatch if the handle
// changed, ErrNotFound if it is gone); with Outcome it gives the write's
// revision too.
func (s *HandleStore[T]) Put(ctx context.Context, id string, v T, ttl time.Duration, opts ...WriteOption) (bool, error) {
	o := writeOptionsOf(opts)
	out, err := s.put(ctx, id, v, wireTTL(ttl, s.defaultTTL, false), o.cond)
	if err == nil {
		o.report(out)
	}
	return out.Existed, err
}

func (s *HandleStore[T]) put(ctx context.Context, id string, v T, ttl *pb.Ttl, cond Condition) (WriteOutcome, error) {
	if err := s.check(id); err != nil {
		return WriteOutcome{}, err
	}
	raw, err := jsonText(v)
	if err != nil {
		return WriteOutcome{}, err
	}
	res, err := s.client.write(ctx, func(w *pb.WriteId) *pb.Write {
		return &pb.Write{Op: &pb.Write_Put{Put: &pb.PutRequest{
			Namespace: s.client.namespace, Store: s.store, Id: id, Value: raw,
			Ttl: ttl, WriteId: w, ExpectedRevision: cond.wire(),
		}}}
	})
	if err != nil {
		return WriteOutcome{}, err
	}
	put := res.GetPut()
	if put == nil {
		return WriteOutcome{}, unexpected("put", res.GetResult())
	}
	return WriteOutcome{Existed: put.GetExisted(), Revision: put.GetRevision()}, nil
}

// Get is the value, and false if the handle is absent or expired.
func (s *HandleStore[T]) Get(ctx context.Context, id string) (T, bool, error) {
	got, ok, err := s.GetVersioned(ctx, id)
	return got.Value, ok, err
}

// GetVersioned is the value with its revisions, and false if absent.
func (s *HandleStore[T]) GetVersioned(ctx context.Context, id string) (Versioned[T], bool, error) {
	return s.getAt(ctx, id, s.consistency)
}

func (s *HandleStore[T]) getAt(ctx context.Context, id string, c Consistency) (Versioned[T], bool, error) {
	var out Versioned[T]
	if err := s.check(id); err != nil {
		return out, false, err
	}
	req := &pb.GetRequest{Namespace: s.client.namespace, Store: s.store, Id: id, Read: c.wire()}
	a, err := s.client.read(ctx, &pb.Read{Op: &pb.Read_Get{Get: req}})
	if err != nil || a.get == nil {
		return out, false, err
	}
	if err := jsonValue(a.get.GetValue(), &out.Value); err != nil {
		return out, false, err
	}
	out.CreateRevision, out.ModRevision = a.get.GetCreateRevision(), a.get.GetModRevision()
	out.ExpiresAt = expiry(a.get.GetExpiresAtMs())
	return out, true, nil
}

// Delete deletes; it says whether a live handle existed. With IfRevision
// it deletes only if the handle is unchanged; with Outcome it gives the
// write's revision too.
func (s *HandleStore[T]) Delete(ctx context.Context, id string, opts ...WriteOption) (bool, error) {
	o := writeOptionsOf(opts)
	out, err := s.delete(ctx, id, o.cond)
	if err == nil {
		o.report(out)
	}
	return out.Existed, err
}

func (s *HandleStore[T]) delete(ctx context.Context, id string, cond Condition) (WriteOutcome, error) {
	if err := s.check(id); err != nil {
		return WriteOutcome{}, err
	}
	res, err := s.client.write(ctx, func(w *pb.WriteId) *pb.Write {
		return &pb.Write{Op: &pb.Write_Delete{Delete: &pb.DeleteRequest{
			Namespace: s.client.namespace, Store: s.store, Id: id, WriteId: w, ExpectedRevision: cond.wire(),
		}}}
	})
	if err != nil {
		return WriteOutcome{}, err
	}
	del := res.GetDelete()
	if del == nil {
		return WriteOutcome{}, unexpected("delete", res.GetResult())
	}
	return WriteOutcome{Existed: del.GetExisted(), Revision: del.GetRevision()}, nil
}

// Len is the number of live (unexpired) handles in the store.
func (s *HandleStore[T]) Len(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	req := &pb.LenRequest{Namespace: s.client.namespace, Store: s.store, Read: s.consistency.wire()}
	resp := &pb.LenResponse{}
	if err := s.client.core.invoke(ctx, pb.Handles_Len_FullMethodName, req, resp, nil); err != nil {
		return 0, err
	}
	return int(resp.GetLen()), nil
}

// Update is a read-modify-write without lost updates: it reads the value,
// calls fn for the new one, and writes it back only if nobody wrote in
// between, else tries again (fn may run several times; an error from fn
// ends the update with that error). It keeps the handle's expiry. It gives
// the value written, and false if the handle is absent.
func (s *HandleStore[T]) Update(ctx context.Context, id string, fn func(T) (T, error)) (T, bool, error) {
	// The first read may be stale: the leader checks the compare-and-set
	// against the revision read, so an old value is refused, never written
	// over. After a conflict, or if the handle seems absent (a node behind
	// the write that made it), reads are linearizable.
	c := Stale
	for {
		var zero T
		cur, ok, err := s.getAt(ctx, id, c)
		if err != nil {
			return zero, false, err
		}
		if !ok && c == Linearizable {
			return zero, false, nil
		}
		stale := c == Stale
		c = Linearizable
		if !ok && stale {
			continue
		}
		next, err := fn(cur.Value)
		if err != nil {
			return zero, false, err
		}
		_, err = s.put(ctx, id, next, wireTTL(TTLDefault, s.defaultTTL, true), IfRevision(cur.ModRevision))
		switch {
		case err == nil:
			return next, true, nil
		case errors.Is(err, ErrRevisionMismatch):
			continue
		case errors.Is(err, ErrNotFound):
			return zero, false, nil
		}
		return zero, false, err
	}
}
