package handlestore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// Watch: the changes to state keys or handles, in revision order with no
// gaps, from a revision or from now. A watch that loses its node (it
// stops, the network fails, nothing is heard for a while) resumes on
// another node from the revision after the last one it delivered, so a
// watcher sees every change once, in order; so does one a node cut off
// because it fell behind (slow_watcher). It fails only for what resuming
// cannot fix: no node takes it within the call timeout, the history moved
// past it (ErrCompacted), or the caller may no longer read what it
// watches.
//
// Next is pull-based (an iterator, All, wraps it) rather than a channel
// fed by a goroutine: the consumer's pace is the watch's pace, an error
// arrives in order with the batches, leaving a loop leaks nothing, and a
// consumer that stops pulling is cut off by the node and resumed from its
// position, never buffered without bound in the client.
type Watch struct {
	client   *Client
	request  *pb.WatchRequest
	progress bool

	// closing is closed by Close, which may come from another goroutine
	// while Next waits.
	closing chan struct{}
	once    sync.Once

	// position and node are read by Position and Node while a Next runs.
	position atomic.Uint64
	node     atomic.Int64

	// mu is held by Next (and the first connect) while it reads.
	mu     sync.Mutex
	reader *streamReader
	closed bool
}

// silence: the node sends progress every 2 s while idle; three missed is a
// lost node.
const silence = 6 * time.Second

// WatchTarget is what a watch follows: WatchPrefix, WatchKey, WatchStore
// or WatchHandle.
type WatchTarget struct {
	target isTarget
}

// isTarget is the generated oneof of WatchRequest.Target.
type isTarget interface {
	targetOf(*pb.WatchRequest)
}

type targetFunc func(*pb.WatchRequest)

func (f targetFunc) targetOf(r *pb.WatchRequest) { f(r) }

// WatchPrefix follows the state keys under prefix ("" = all).
func WatchPrefix(prefix string) WatchTarget {
	return WatchTarget{targetFunc(func(r *pb.WatchRequest) { r.Target = &pb.WatchRequest_Prefix{Prefix: prefix} })}
}

// WatchKey follows one state key.
func WatchKey(key string) WatchTarget {
	return WatchTarget{targetFunc(func(r *pb.WatchRequest) { r.Target = &pb.WatchRequest_Key{Key: key} })}
}

// WatchStore follows every handle of a store.
func WatchStore(store string) WatchTarget {
	return WatchTarget{targetFunc(func(r *pb.WatchRequest) { r.Target = &pb.WatchRequest_Store{Store: store} })}
}

// WatchHandle follows one handle.
func WatchHandle(store, id string) WatchTarget {
	return WatchTarget{targetFunc(func(r *pb.WatchRequest) {
		r.Target = &pb.WatchRequest_Handle{Handle: &pb.HandleRef{Store: store, Id: id}}
	})}
}

// WatchOptions shape a watch.
type WatchOptions struct {
	// StartRevision is the first revision delivered (inclusive); 0: the
	// changes after now.
	StartRevision uint64
	// Progress also delivers batches without changes while idle, with the
	// revision the watch reached.
	Progress bool
	// KeysOnly leaves values out of puts.
	KeysOnly bool
}

// ChangeKind is what a change did.
type ChangeKind int

const (
	ChangePut ChangeKind = iota
	ChangeDelete
	// ChangeExpire: removed because its TTL ran out.
	ChangeExpire
)

func (k ChangeKind) String() string {
	if names := [...]string{"put", "delete", "expire"}; int(k) >= 0 && int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("ChangeKind(%d)", int(k))
}

// Change is one change of a key or handle.
type Change struct {
	Kind ChangeKind
	// Revision of the change (the changes of one write share it).
	Revision uint64
	// Store names the handle store of a handle's change ("" for state keys).
	Store string
	// Key is the state key, or the handle id.
	Key string
	// Value of a put (zero with KeysOnly); a handle's is the bytes of its JSON.
	Value          Value
	CreateRevision uint64
	ExpiresAt      time.Time
}

// WatchBatch is the changes of whole revisions.
type WatchBatch struct {
	// Revision: every change through it has been delivered.
	Revision uint64
	// Changes is empty for a progress notice.
	Changes []Change
}

// Watch starts watching target and returns once a node has established
// it, so every later change (or every one from StartRevision) is
// delivered. Close a watch you stop reading (All closes its own).
func (c *Client) Watch(ctx context.Context, target WatchTarget, opts WatchOptions) (*Watch, error) {
	if target.target == nil {
		return nil, invalid("watch exactly one of a prefix, key, store or handle")
	}
	req := &pb.WatchRequest{
		Namespace: c.namespace, StartRevision: opts.StartRevision, ProgressNotify: true, KeysOnly: opts.KeysOnly,
	}
	target.target.targetOf(req)
	w := &Watch{client: c, request: req, progress: opts.Progress, closing: make(chan struct{})}
	w.position.Store(opts.StartRevision)
	w.node.Store(int64(c.watchNode()))
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// watchNode is the endpoint a new watch opens on: the ones other than the
// preferred (the leader, once known) in turn, so watches do not take the
// leader's time from the writes.
func (c *Client) watchNode() int {
	cs := c.core.conns
	n := len(cs.targets)
	if n < 2 {
		return 0
	}
	k := int(cs.watches.Add(1)-1) % (n - 1)
	return (cs.preferredIndex() + 1 + k) % n
}

// Position is the next revision this watch delivers (resume a later
// watch from it).
func (w *Watch) Position() uint64 {
	return w.position.Load()
}

// Node is the endpoint serving the watch now.
func (w *Watch) Node() string {
	return w.client.core.conns.targets[w.node.Load()]
}

// Close ends the watch: a Next waiting or after it gives ErrClosed.
func (w *Watch) Close() error {
	w.once.Do(func() { close(w.closing) })
	// A Next under way drops the stream itself.
	if w.mu.TryLock() {
		w.closed = true
		w.drop()
		w.mu.Unlock()
	}
	return nil
}

func (w *Watch) drop() {
	if w.reader != nil {
		w.reader.close()
		w.reader = nil
	}
}

// moveOn drops the stream and turns to the next node.
func (w *Watch) moveOn() {
	w.drop()
	w.node.Store((w.node.Load() + 1) % int64(len(w.client.core.conns.targets)))
}

// All is the batches as an iterator: it ends when the watch is closed or
// ctx ends (quietly), or fails (the error is yielded last). Leaving the
// loop closes the watch.
func (w *Watch) All(ctx context.Context) iter.Seq2[WatchBatch, error] {
	return func(yield func(WatchBatch, error) bool) {
		defer w.Close()
		for {
			b, err := w.Next(ctx)
			if err != nil {
				if !errors.Is(err, ErrClosed) && ctx.Err() == nil {
					yield(WatchBatch{}, err)
				}
				return
			}
			if !yield(b, nil) {
				return
			}
		}
	}
}

// Next is the next batch of changes (or, with Progress, of none). If ctx
// ends first, Next gives its error and the watch stays usable.
func (w *Watch) Next(ctx context.Context) (WatchBatch, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if w.isClosing() {
			return WatchBatch{}, ErrClosed
		}
		if w.reader == nil {
			if err := w.connectLocked(ctx); err != nil {
				return WatchBatch{}, err
			}
		}
		m, what, err := w.reader.read(ctx, w.closing, silence)
		if w.isClosing() {
			continue
		}
		if ctx.Err() != nil {
			return WatchBatch{}, ctx.Err()
		}
		switch what {
		case gotMessage:
			if b, ok := w.take(m); ok {
				return b, nil
			}
			continue
		case gotFailure:
			if err := w.failed(statusOf(err, w.reader.trailer)); err != nil {
				return WatchBatch{}, err
			}
		}
		// The node ended the watch, failed, or went quiet: resume on the next one.
		w.moveOn()
	}
}

// failed ends the watch on a status the rule does not resume from (with
// mu held): its error, or nil to resume on the next node.
func (w *Watch) failed(s rpcStatus) error {
	d := decide(s)
	if d.resume {
		return nil
	}
	w.closed = true
	w.drop()
	if d.tls {
		return s.tlsError("")
	}
	return s.toError()
}

// isClosing: Close was called, or the watch failed (with mu held).
func (w *Watch) isClosing() bool {
	select {
	case <-w.closing:
		w.closed = true
		w.drop()
	default:
	}
	return w.closed
}

func (w *Watch) connect(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.connectLocked(ctx)
}

// connectLocked opens the watch on a node, trying them in turn with
// backoff until the call timeout (or ctx's deadline).
func (w *Watch) connectLocked(ctx context.Context) error {
	k := w.client.core
	ctx, cancel, budget := k.bound(ctx)
	defer cancel()
	for tries := 0; ; tries++ {
		s, err := w.open(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ended(ctx, budget, err)
		}
		if w.isClosing() {
			return ErrClosed
		}
		d := decide(s)
		if d.tls {
			return s.tlsError("")
		}
		if !d.resume {
			return err
		}
		w.moveOn()
		if err := k.pause(ctx, k.backoff.wait(tries), budget, err); err != nil {
			return err
		}
	}
}

// open opens the watch on the current node from the position and reads
// the answer that says it is established.
func (w *Watch) open(ctx context.Context) (rpcStatus, error) {
	cs := w.client.core.conns
	cc, err := cs.conn(int(w.node.Load()))
	if err != nil {
		return rpcStatus{code: codes.InvalidArgument, detail: &pb.ErrorDetail{}}, err
	}
	req := w.request
	if p := w.position.Load(); p > 0 {
		req.StartRevision = p
	}
	sctx, cancel := context.WithCancel(cs.outgoing(context.Background()))
	stream, err := pb.NewWatchClient(cc).Watch(sctx, req)
	if err != nil {
		cancel()
		s := statusOf(err, nil)
		return s, s.toError()
	}
	r := newStreamReader(sctx, cancel, stream)
	created, what, err := r.read(ctx, w.closing, silence)
	return w.established(r, created, what, err)
}

// established checks the first answer of a watch.
func (w *Watch) established(r *streamReader, created *pb.WatchResponse, what got, err error) (rpcStatus, error) {
	lost := func(msg string) (rpcStatus, error) {
		r.close()
		s := rpcStatus{code: codes.Unavailable, message: msg, detail: &pb.ErrorDetail{}}
		return s, s.toError()
	}
	switch what {
	case gotFailure:
		r.close()
		s := statusOf(err, r.trailer)
		return s, s.toError()
	case gotEnd:
		return lost("the watch ended before it was established")
	case gotSilence:
		return lost("no answer to the watch")
	}
	if !created.GetCreated() {
		r.close()
		s := rpcStatus{code: codes.Internal, message: "the node's first watch answer is not 'created'", detail: &pb.ErrorDetail{Reason: string(ReasonInternal)}}
		return s, s.toError()
	}
	w.position.Store(created.GetRevision() + 1)
	w.reader = r
	return rpcStatus{}, nil
}

// take is the changes of a response not delivered yet (false: nothing to
// deliver).
func (w *Watch) take(m *pb.WatchResponse) (WatchBatch, bool) {
	from := w.position.Load()
	w.position.Store(max(from, m.GetRevision()+1))
	b := WatchBatch{Revision: m.GetRevision()}
	for _, e := range m.GetEvents() {
		if e.GetRevision() >= from {
			b.Changes = append(b.Changes, changeOf(e))
		}
	}
	if len(b.Changes) == 0 && (!w.progress || m.GetRevision()+1 < from) {
		return b, false
	}
	return b, true
}

func changeOf(e *pb.WatchEvent) Change {
	return Change{
		Kind: ChangeKind(e.GetKind()), Revision: e.GetRevision(), Store: e.GetStore(), Key: e.GetKey(),
		Value: valueFromWire(e.GetValue()), CreateRevision: e.GetCreateRevision(), ExpiresAt: expiry(e.GetExpiresAtMs()),
	}
}
