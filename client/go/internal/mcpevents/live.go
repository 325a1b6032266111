package mcpevents

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// Live is what the origin of a stream knows of it as it appends: an
// Append given one keeps the stream's liveness record (live/<token>) from
// the stream's first event until the event that completes it, or until
// Release, and records the requests for good (requests/<token>, with the
// events' TTL). Nil keeps none: a follower then takes the origin for gone.
type Live struct {
	// Requests are the JSON-RPC ids of the requests the stream answers, as
	// the client sent them (none: the stream's first response completes
	// it, and a follower cannot answer for the origin).
	Requests []json.RawMessage
}

// liveRecord is the value of live/<token> and of requests/<token>.
type liveRecord struct {
	Requests []json.RawMessage `json:"requests"`
}

// origin is a stream this process appends to and keeps alive. Its fields
// but stop change with the stream's lock held.
type origin struct {
	token, session string
	pending        *Pending
	record         json.RawMessage
	// revision of the liveness record as this process last wrote it.
	revision uint64
	stop     chan struct{}
	stopped  bool
}

// LiveKey is the key of the liveness record of the stream with token.
func (l *Log) LiveKey(token string) string { return l.prefix + "/live/" + token }

// RequestsKey is the key of the requests the stream with token answers,
// kept as long as its events.
func (l *Log) RequestsKey(token string) string { return l.prefix + "/requests/" + token }

func newOrigin(token, session string, live *Live) *origin {
	p := NewPending(live.Requests)
	requests := p.Requests()
	if requests == nil {
		requests = []json.RawMessage{}
	}
	record, _ := json.Marshal(liveRecord{Requests: requests})
	return &origin{token: token, session: session, pending: p, record: record, stop: make(chan struct{})}
}

// liveItems are the keys of o in an event's batch: the liveness record
// (alive for LiveTTL with the first event, written expired with the one
// that completes the stream) and, with the first, the requests.
func (l *Log) liveItems(o *origin, began bool) []handlestore.StoreItem {
	if !began {
		return []handlestore.StoreItem{{Key: l.LiveKey(o.token), Value: o.record, TTL: liveEndedTTL}}
	}
	return []handlestore.StoreItem{
		{Key: l.LiveKey(o.token), Value: o.record, TTL: LiveTTL},
		{Key: l.RequestsKey(o.token), Value: o.record, TTL: l.ttl},
	}
}

// opened is the stream at key this process keeps alive with token (nil if
// none).
func (l *Log) opened(key, token string) *origin {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o := l.origins[key]; o != nil && o.token == token {
		return o
	}
	return nil
}

// IsOrigin says whether this process keeps the stream alive: it runs it.
func (l *Log) IsOrigin(session, stream string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.origins[l.HeadKey(session, stream)] != nil
}

// begin keeps a stream alive from its first event: the record is rewritten
// every LiveRefresh until the stream completes or is released.
func (l *Log) begin(key string, o *origin) {
	l.mu.Lock()
	if old := l.origins[key]; old != nil && !old.stopped {
		old.stopped = true
		close(old.stop)
	}
	l.origins[key] = o
	l.mu.Unlock()
	go l.refresh(key, o)
}

func (l *Log) refresh(key string, o *origin) {
	t := time.NewTicker(LiveRefresh)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-t.C:
		}
		if !l.rewrite(key, o) {
			return
		}
	}
}

// rewrite writes o's liveness record again, by compare-and-set on the
// revision this process last wrote, so a record that expired (a follower
// may have answered for the origin already) or ended is never brought
// back; under the stream's lock, so it never lands after the batch that
// completes the stream or a release. It says whether to go on.
func (l *Log) rewrite(key string, o *origin) bool {
	unlock := l.lock(key)
	defer unlock()
	if o.stopped {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), LiveRefresh)
	defer cancel()
	rev, err := l.state.Store(ctx, l.LiveKey(o.token), o.record,
		handlestore.TTL(LiveTTL), handlestore.IfRevision(o.revision))
	switch {
	case err == nil:
		o.revision = rev
	case errors.Is(err, handlestore.ErrRevisionMismatch), errors.Is(err, handlestore.ErrNotFound):
		l.end(key, o) // gone: followers may have answered for this process
		return false
	case errors.Is(err, handlestore.ErrClosed):
		return false
	}
	return true
}

// end stops keeping o alive (with the stream's lock held).
func (l *Log) end(key string, o *origin) {
	if o.stopped {
		return
	}
	o.stopped = true
	close(o.stop)
	l.mu.Lock()
	if l.origins[key] == o {
		delete(l.origins, key)
	}
	l.mu.Unlock()
}

// Release says the stream can get no more events from this process (its
// request ended, its session closed): the liveness record stops being
// refreshed and is deleted, so a follower of a stream left without its
// response answers for it at once instead of after LiveTTL.
func (l *Log) Release(ctx context.Context, session, stream string) error {
	key := l.HeadKey(session, stream)
	unlock := l.lock(key)
	defer unlock()
	l.mu.Lock()
	o := l.origins[key]
	l.mu.Unlock()
	if o == nil || o.stopped {
		return nil
	}
	l.end(key, o)
	_, err := l.state.Delete(ctx, l.LiveKey(o.token), nil)
	return err
}

// ReleaseSession releases every stream of session this process keeps
// alive.
func (l *Log) ReleaseSession(ctx context.Context, session string) error {
	type open struct{ key, token string }
	var streams []open
	l.mu.Lock()
	for key, o := range l.origins {
		if o.session == session {
			streams = append(streams, open{key, o.token})
		}
	}
	l.mu.Unlock()
	var errs []error
	for _, s := range streams {
		unlock := l.lock(s.key)
		if o := l.opened(s.key, s.token); o != nil && !o.stopped {
			l.end(s.key, o)
			_, err := l.state.Delete(ctx, l.LiveKey(o.token), nil)
			errs = append(errs, err)
		}
		unlock()
	}
	return errors.Join(errs...)
}
