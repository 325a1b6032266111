package handlestore

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
)

// The previous release's names, kept for one release on top of their
// replacements (Conn; IfRevision, TTL and Outcome): they go in the next.

// Invoke calls a unary method of the contract (gen/handlestore/v1's
// *_FullMethodName) with this client's failover, retries, credentials
// and deadline. A write request must carry a write id from NewWriteID,
// the same on a retry.
//
// Deprecated: use the generated stubs on Conn, as
// pb.NewAdminClient(c.Conn()).Status(ctx, req); Invoke goes in the next
// release.
func (c *Client) Invoke(ctx context.Context, method string, req, resp proto.Message) error {
	return c.Conn().Invoke(ctx, method, req, resp)
}

// Revision is a pointer to r, for the ExpectedRevision fields.
//
// Deprecated: use IfRevision for options; for a field of a generated wire
// message, proto.Uint64.
func Revision(r uint64) *uint64 { return &r }

// PutOptions shape a PutWith.
//
// Deprecated: use Put's options: IfRevision, Outcome.
type PutOptions struct {
	TTL time.Duration
	// ExpectedRevision makes the put a compare-and-set: applied only if the
	// handle is at this revision (0: only if it is absent). Nil: upsert.
	ExpectedRevision *uint64
}

// PutWith is an upsert, or with ExpectedRevision a compare-and-set
// (ErrRevisionMismatch if the handle changed, ErrNotFound if it is gone).
//
// Deprecated: use Put(ctx, id, v, ttl, IfRevision(n), Outcome(&out)).
func (s *HandleStore[T]) PutWith(ctx context.Context, id string, v T, opts PutOptions) (WriteOutcome, error) {
	var out WriteOutcome
	_, err := s.Put(ctx, id, v, opts.TTL, ifRevisionAt(opts.ExpectedRevision), Outcome(&out))
	return out, err
}

// DeleteWith deletes; with expectedRevision, only if unchanged.
//
// Deprecated: use Delete(ctx, id, IfRevision(n), Outcome(&out)).
func (s *HandleStore[T]) DeleteWith(ctx context.Context, id string, expectedRevision *uint64) (WriteOutcome, error) {
	var out WriteOutcome
	_, err := s.Delete(ctx, id, ifRevisionAt(expectedRevision), Outcome(&out))
	return out, err
}

// StoreOptions shape a Store; it is a StoreOption, so the previous
// release's Store(ctx, key, value, StoreOptions{...}) reads the same.
//
// Deprecated: use Store's options: TTL, IfRevision.
type StoreOptions struct {
	TTL time.Duration
	// ExpectedRevision: store only if the key is at this revision (0: only
	// if absent). Nil: unconditional.
	ExpectedRevision *uint64
}

func (o StoreOptions) applyStore(w *writeOptions) {
	w.ttl, w.cond = o.TTL, ifRevisionAt(o.ExpectedRevision)
}
