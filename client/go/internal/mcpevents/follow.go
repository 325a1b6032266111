package mcpevents

import (
	"context"
	"errors"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// ErrNoAnswer: the stream's origin is gone before completing it, and the
// requests it answers are unknown (its origin could not name them, or its
// records were gone before the follower read them), so no error response
// can be made for them. The adapter ends the resumption; the SDK's client
// ends the call.
var ErrNoAnswer = errors.New("mcpevents: the stream's origin is gone without answering, and the requests it answers are unknown")

// ErrStreamGone: the stream's head is gone (expired, purged) while a
// follower answered for its origin.
var ErrStreamGone = errors.New("mcpevents: the event stream is gone")

// Follower serves one resumption of a stream that another process may
// still be writing (docs/dev/resume.md): it sends the stored events after
// the client's last, then every later one as the origin stores it, until
// the stream is complete; if the origin goes first (its liveness record is
// deleted or expires), it appends the origin_lost error responses and
// sends them.
type Follower struct {
	log                    *Log
	session, stream, token string
	// sent: the last sequence number the client has.
	sent    uint64
	rev     uint64
	pending *Pending
	// live: the liveness record was there after the replay was read.
	live   bool
	replay []Event
	// complete: the stored events complete the stream.
	complete bool
}

// Follow reads what a resumption after event seq of the stream with token
// (stream in session) starts with: the stored events, the liveness record
// and the requests. It sends nothing: an adapter can still refuse the
// resumption.
func (l *Log) Follow(ctx context.Context, session, stream, token string, seq uint64) (*Follower, error) {
	all, rev, err := l.afterAt(ctx, token, 0)
	if err != nil {
		return nil, err
	}
	recs, err := l.state.BatchRetrieve(ctx, []string{l.LiveKey(token), l.RequestsKey(token)})
	if err != nil {
		return nil, err
	}
	var record liveRecord
	for _, rec := range recs {
		if rec != nil && rec.Value.Decode(&record) == nil {
			break
		}
	}
	f := &Follower{
		log: l, session: session, stream: stream, token: token, sent: seq, rev: rev,
		pending: NewPending(record.Requests), live: recs[0] != nil,
	}
	whole := NewPending(record.Requests)
	for _, e := range all {
		if e.Seq <= seq {
			f.pending.Add(e.Data)
		} else {
			f.replay = append(f.replay, e)
		}
		f.complete = whole.Add(e.Data)
	}
	return f, nil
}

// Complete says whether the stored events complete the stream: Run sends
// the replay and ends.
func (f *Follower) Complete() bool { return f.complete }

// Replay is the stored events the resumption starts with.
func (f *Follower) Replay() []Event { return f.replay }

// CanAnswer says whether the follower knows the requests the stream
// answers, so that it can answer them itself if the origin goes.
func (f *Follower) CanAnswer() bool { return len(f.pending.Requests()) > 0 }

// Run sends the replay and every later event, each once and in order
// (priming events, which carry no message, are skipped), and returns nil
// once the stream is complete. send writes one event to the client; idle,
// if not nil, is called after Keepalive without an event. It returns
// ctx's error when the client goes, ErrNoAnswer or ErrStreamGone when the
// origin went and no answer can be made, or the first error of send, idle
// or the cluster.
func (f *Follower) Run(ctx context.Context, send func(Event) error, idle func() error) error {
	for _, e := range f.replay {
		if err := f.deliver(e, send); err != nil {
			return err
		}
	}
	if f.pending.Complete() {
		return nil
	}
	if !f.live {
		return f.answerForOrigin(ctx, send)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes, err := f.watch(ctx)
	if err != nil {
		return err
	}
	quiet := time.NewTimer(Keepalive)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-quiet.C:
			if idle != nil {
				if err := idle(); err != nil {
					return err
				}
			}
		case c := <-changes:
			switch {
			case c.err != nil:
				return c.err
			case c.gone:
				return f.answerForOrigin(ctx, send)
			}
			if err := f.caughtUp(ctx, c.event, send); err != nil {
				return err
			}
			if f.pending.Complete() {
				return nil
			}
		}
		quiet.Reset(Keepalive)
	}
}

// deliver sends e, unless it is a priming event, and records it.
func (f *Follower) deliver(e Event, send func(Event) error) error {
	if e.Seq <= f.sent {
		return nil
	}
	if e.Data != nil {
		if err := send(e); err != nil {
			return err
		}
	}
	f.sent = e.Seq
	f.pending.Add(e.Data)
	return nil
}

// caughtUp sends e, and first what is stored before it if the watch
// skipped any.
func (f *Follower) caughtUp(ctx context.Context, e Event, send func(Event) error) error {
	if e.Seq <= f.sent+1 {
		return f.deliver(e, send)
	}
	evs, err := f.log.After(ctx, f.token, f.sent)
	if err != nil {
		return err
	}
	for _, s := range evs {
		if err := f.deliver(s, send); err != nil {
			return err
		}
	}
	return f.deliver(e, send)
}

// change is what the watches saw: an event, the liveness record gone, or
// a failure.
type change struct {
	event Event
	gone  bool
	err   error
}

// watch follows the stream's events and its liveness record from the
// replay's revision on.
func (f *Follower) watch(ctx context.Context) (<-chan change, error) {
	from := handlestore.WatchOptions{StartRevision: f.rev + 1}
	events, err := f.log.client.Watch(ctx, handlestore.WatchPrefix(f.log.StreamPrefix(f.token)), from)
	if err != nil {
		return nil, err
	}
	from.KeysOnly = true
	live, err := f.log.client.Watch(ctx, handlestore.WatchKey(f.log.LiveKey(f.token)), from)
	if err != nil {
		_ = events.Close()
		return nil, err
	}
	out := make(chan change)
	go pump(ctx, events, out, func(c handlestore.Change) (change, bool) {
		if c.Kind != handlestore.ChangePut {
			return change{}, false
		}
		e, ok, err := eventOf(f.token, c.Key, c.Value)
		return change{event: e, err: err}, ok || err != nil
	})
	go pump(ctx, live, out, func(c handlestore.Change) (change, bool) {
		return change{gone: true}, c.Kind != handlestore.ChangePut
	})
	return out, nil
}

// pump hands the changes of w that matter to out until ctx ends.
func pump(ctx context.Context, w *handlestore.Watch, out chan<- change, of func(handlestore.Change) (change, bool)) {
	put := func(c change) bool {
		select {
		case out <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for b, err := range w.All(ctx) {
		if err != nil {
			put(change{err: err})
			return
		}
		for _, c := range b.Changes {
			if ch, ok := of(c); ok && !put(ch) {
				return
			}
		}
	}
}
