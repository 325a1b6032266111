package handlestore

import (
	"context"
	"iter"
	"time"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// StateTool is the state tool of a namespace: hierarchical keys
// ("checkpoints/agent-7/latest") with JSON or byte values, listed by
// prefix in key order, written in atomic batches, replicated like handles.
type StateTool struct {
	client      *Client
	defaultTTL  time.Duration
	consistency Consistency
}

// StateToolOptions shape a StateTool.
type StateToolOptions struct {
	// DefaultTTL is the TTL of writes with TTLDefault (0: never expires).
	DefaultTTL time.Duration
	// Consistency of reads (default Linearizable).
	Consistency Consistency
}

// StateEntry is a key with its value and revisions.
type StateEntry struct {
	Key string
	// Value is zero in a list without values.
	Value          Value
	CreateRevision uint64
	ModRevision    uint64
	// ExpiresAt is when the key expires (zero: never).
	ExpiresAt time.Time
}

// StoreItem is one write of a BatchStore.
type StoreItem struct {
	Key string
	// Value: a Value, []byte (bytes) or anything else (JSON).
	Value any
	TTL   time.Duration
	// If makes the item a compare-and-set (IfRevision): if it fails,
	// nothing of the batch is written.
	If Condition
	// ExpectedRevision: store only if the key is at this revision (0: only
	// if absent). Nil: unconditional. Set If or this, not both.
	//
	// Deprecated: use If: IfRevision(n); ExpectedRevision goes in the next
	// release.
	ExpectedRevision *uint64
}

// Deleted is what a delete did.
type Deleted struct {
	// Count of live keys deleted.
	Count uint64
	// More: a prefix delete left keys under the prefix.
	More     bool
	Revision uint64
}

// ListOptions shape a List.
type ListOptions struct {
	// Limit is keys per page (0 = 100, at most 1000).
	Limit      uint32
	PageToken  string
	WithValues bool
	// Consistency of this read (nil: the tool's).
	Consistency *Consistency
}

// ListPage is one page of a List.
type ListPage struct {
	Entries []StateEntry
	// NextPageToken is "" when there are no more keys.
	NextPageToken string
	ReadRevision  uint64
}

// StateTool is the state tool in this client's namespace.
func (c *Client) StateTool(opts StateToolOptions) *StateTool {
	return &StateTool{client: c, defaultTTL: opts.DefaultTTL, consistency: opts.Consistency}
}

func (t *StateTool) ns() string { return t.client.namespace }

func entryFromWire(e *pb.StateEntry) StateEntry {
	return StateEntry{
		Key: e.GetKey(), Value: valueFromWire(e.GetValue()),
		CreateRevision: e.GetCreateRevision(), ModRevision: e.GetModRevision(), ExpiresAt: expiry(e.GetExpiresAtMs()),
	}
}

// Store stores value (a Value, []byte as bytes, anything else as JSON)
// and gives the write's revision. With IfRevision it is a compare-and-set;
// TTL sets its time to live (else the tool's default); Outcome says
// whether a live key was there.
func (t *StateTool) Store(ctx context.Context, key string, value any, opts ...StoreOption) (uint64, error) {
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	v, err := valueOf(value)
	if err != nil {
		return 0, err
	}
	o := storeOptions(opts)
	res, err := t.client.write(ctx, func(w *pb.WriteId) *pb.Write {
		return &pb.Write{Op: &pb.Write_Store{Store: &pb.StoreRequest{
			Namespace: t.ns(), Key: key, Value: v.wire(), Ttl: wireTTL(o.ttl, t.defaultTTL, false),
			ExpectedRevision: o.cond.wire(), WriteId: w,
		}}}
	})
	if err != nil {
		return 0, err
	}
	stored := res.GetStore()
	if stored == nil {
		return 0, unexpected("store", res.GetResult())
	}
	o.report(WriteOutcome{Existed: stored.GetExisted(), Revision: stored.GetRevision()})
	return stored.GetRevision(), nil
}

// Retrieve is the entry, or nil if the key is absent or expired.
func (t *StateTool) Retrieve(ctx context.Context, key string) (*StateEntry, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	req := &pb.RetrieveRequest{Namespace: t.ns(), Key: key, Read: t.consistency.wire()}
	a, err := t.client.read(ctx, &pb.Read{Op: &pb.Read_Retrieve{Retrieve: req}})
	if err != nil || a.retrieve.GetEntry() == nil {
		return nil, err
	}
	e := entryFromWire(a.retrieve.GetEntry())
	return &e, nil
}

// Get decodes the key's value into dst; false if the key is absent.
func (t *StateTool) Get(ctx context.Context, key string, dst any) (bool, error) {
	e, err := t.Retrieve(ctx, key)
	if err != nil || e == nil {
		return false, err
	}
	return true, e.Value.Decode(dst)
}

// Delete deletes one key; with IfRevision, only if it is unchanged.
// (A nil option is ignored, so the previous release's Delete(ctx, key,
// nil) still reads the same.)
func (t *StateTool) Delete(ctx context.Context, key string, opts ...WriteOption) (Deleted, error) {
	if err := CheckKey(key); err != nil {
		return Deleted{}, err
	}
	o := writeOptionsOf(opts)
	d, err := t.delete(ctx, &pb.StateDeleteRequest{Namespace: t.ns(), Key: key, ExpectedRevision: o.cond.wire()})
	if err == nil {
		o.report(WriteOutcome{Existed: d.Count > 0, Revision: d.Revision})
	}
	return d, err
}

// DeletePrefix deletes up to limit keys (0 = 1000, at most 10000) under a
// non-empty prefix, atomically.
func (t *StateTool) DeletePrefix(ctx context.Context, prefix string, limit uint32) (Deleted, error) {
	if err := CheckPrefix(prefix); err != nil {
		return Deleted{}, err
	}
	if prefix == "" {
		return Deleted{}, invalid("a prefix delete needs a non-empty prefix")
	}
	return t.delete(ctx, &pb.StateDeleteRequest{Namespace: t.ns(), Key: prefix, Prefix: true, Limit: limit})
}

func (t *StateTool) delete(ctx context.Context, req *pb.StateDeleteRequest) (Deleted, error) {
	res, err := t.client.write(ctx, func(w *pb.WriteId) *pb.Write {
		req.WriteId = w
		return &pb.Write{Op: &pb.Write_StateDelete{StateDelete: req}}
	})
	if err != nil {
		return Deleted{}, err
	}
	d := res.GetStateDelete()
	if d == nil {
		return Deleted{}, unexpected("delete", res.GetResult())
	}
	return Deleted{Count: d.GetDeleted(), More: d.GetMore(), Revision: d.GetRevision()}, nil
}

// List is one page of the keys under prefix, in key order.
func (t *StateTool) List(ctx context.Context, prefix string, opts ListOptions) (ListPage, error) {
	if err := CheckPrefix(prefix); err != nil {
		return ListPage{}, err
	}
	req := &pb.ListRequest{
		Namespace: t.ns(), Prefix: prefix, Limit: opts.Limit, PageToken: opts.PageToken,
		WithValues: opts.WithValues, Read: t.consistency.or(opts.Consistency).wire(),
	}
	resp := &pb.ListResponse{}
	if err := t.client.core.invoke(ctx, pb.State_List_FullMethodName, req, resp, nil); err != nil {
		return ListPage{}, err
	}
	page := ListPage{NextPageToken: resp.GetNextPageToken(), ReadRevision: resp.GetReadRevision()}
	for _, e := range resp.GetEntries() {
		page.Entries = append(page.Entries, entryFromWire(e))
	}
	return page, nil
}

// Scan is every entry under prefix, page after page (later pages are read
// at least at the first page's revision); it stops at the first error,
// which it yields.
func (t *StateTool) Scan(ctx context.Context, prefix string, opts ListOptions) iter.Seq2[StateEntry, error] {
	return func(yield func(StateEntry, error) bool) {
		for {
			page, err := t.List(ctx, prefix, opts)
			if err != nil {
				yield(StateEntry{}, err)
				return
			}
			for _, e := range page.Entries {
				if !yield(e, nil) {
					return
				}
			}
			if page.NextPageToken == "" {
				return
			}
			at := AtLeast(page.ReadRevision)
			opts.PageToken, opts.Consistency = page.NextPageToken, &at
		}
	}
}

// Exists says whether the key is live.
func (t *StateTool) Exists(ctx context.Context, key string) (bool, error) {
	if err := CheckKey(key); err != nil {
		return false, err
	}
	req := &pb.ExistsRequest{Namespace: t.ns(), Key: key, Read: t.consistency.wire()}
	resp := &pb.ExistsResponse{}
	if err := t.client.core.invoke(ctx, pb.State_Exists_FullMethodName, req, resp, nil); err != nil {
		return false, err
	}
	return resp.GetExists(), nil
}

// BatchStore writes all items or none, in one Raft entry: if any
// compare-and-set fails, nothing is written. It gives the revision.
func (t *StateTool) BatchStore(ctx context.Context, items []StoreItem) (uint64, error) {
	wire := make([]*pb.StoreItem, len(items))
	for i, it := range items {
		if err := CheckKey(it.Key); err != nil {
			return 0, err
		}
		v, err := valueOf(it.Value)
		if err != nil {
			return 0, err
		}
		cond, err := it.condition()
		if err != nil {
			return 0, err
		}
		wire[i] = &pb.StoreItem{Key: it.Key, Value: v.wire(), Ttl: wireTTL(it.TTL, t.defaultTTL, false), ExpectedRevision: cond.wire()}
	}
	res, err := t.client.write(ctx, func(w *pb.WriteId) *pb.Write {
		return &pb.Write{Op: &pb.Write_BatchStore{BatchStore: &pb.BatchStoreRequest{Namespace: t.ns(), Items: wire, WriteId: w}}}
	})
	if err != nil {
		return 0, err
	}
	if res.GetBatchStore() == nil {
		return 0, unexpected("batch store", res.GetResult())
	}
	return res.GetBatchStore().GetRevision(), nil
}

// condition is the item's If, or its deprecated ExpectedRevision.
func (it StoreItem) condition() (Condition, error) {
	if it.ExpectedRevision == nil {
		return it.If, nil
	}
	if it.If.set {
		return Condition{}, invalid("store item %s: If and ExpectedRevision both set", shown(it.Key))
	}
	return ifRevisionAt(it.ExpectedRevision), nil
}

// BatchRetrieve is one consistent view of several keys, in the order
// asked (nil for an absent key).
func (t *StateTool) BatchRetrieve(ctx context.Context, keys []string) ([]*StateEntry, error) {
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			return nil, err
		}
	}
	req := &pb.BatchRetrieveRequest{Namespace: t.ns(), Keys: keys, Read: t.consistency.wire()}
	resp := &pb.BatchRetrieveResponse{}
	if err := t.client.core.invoke(ctx, pb.State_BatchRetrieve_FullMethodName, req, resp, nil); err != nil {
		return nil, err
	}
	out := make([]*StateEntry, len(resp.GetEntries()))
	for i, m := range resp.GetEntries() {
		if m.GetEntry() != nil {
			e := entryFromWire(m.GetEntry())
			out[i] = &e
		}
	}
	return out, nil
}
