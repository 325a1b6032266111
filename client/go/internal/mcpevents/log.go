// Package mcpevents keeps the SSE event streams of the Go MCP SDK seams
// (client/go/gosdk, client/go/mcpgo) in the cluster, in the layout of the
// Rust, Python and TypeScript event stores (client/ts/src/mcp/eventStore.ts,
// client/python/src/handlestore/mcp/event_store.py,
// client/rust/src/rmcp_seams/event_store.rs), in the client's namespace
// under a prefix (mcp/events):
//
//   - streams/<digest of scope + stream id>: the stream's head {token, seq}:
//     a random 128-bit token drawn with the stream's first event, and the
//     last sequence number. The scope is the session id and a NUL ("" for
//     no session), as the TypeScript store's scoped(sessionId) makes it;
//   - tokens/<token>: the stream id;
//   - events/<token>/<bucket>/<seq>: one event {message} (null for an SDK's
//     priming event, which carries no message), in sequence order;
//   - sessions/<digest of the session id>/<token>: the stream id, for each
//     stream of a session (not for the empty session), so that a session's
//     streams can be purged. The other stores do not write these.
//
// One atomic batch moves the head by compare-and-set and writes the event,
// so two writers never reuse a sequence number. Every key expires after
// the TTL; a stream keeps at most its last MaxEvents, older ones going a
// bucket (100) at a time.
package mcpevents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// Prefix is the default key prefix, the other clients' EVENTS_PREFIX.
const Prefix = "mcp/events"

// Bucket is the number of events per bucket: the unit older events are
// deleted in.
const Bucket = 100

const (
	appendAttempts = 16
	headsCap       = 10_000
	replayPage     = 100
	purgeLimit     = 10_000
)

// Options shape a Log.
type Options struct {
	// Prefix of the keys (default mcp/events): several servers in one
	// namespace.
	Prefix string
	// TTL of every key (default an hour, at least a second).
	TTL time.Duration
	// MaxEvents is how many of a stream's latest events are kept (default
	// 1000, at least Bucket).
	MaxEvents int
}

// Head is a stream's head: its token and last sequence number.
type Head struct {
	Token string `json:"token"`
	Seq   uint64 `json:"seq"`
	// Revision of the head key (0: the stream does not exist yet).
	Revision uint64 `json:"-"`
}

// Event is one stored event.
type Event struct {
	Seq uint64
	// Data is the message; nil for a priming event.
	Data []byte
}

// Log is the event streams of one prefix, shared by every replica. Safe
// for concurrent use; appends to one stream run one at a time in this
// process.
type Log struct {
	client    *handlestore.Client
	state     *handlestore.StateTool
	prefix    string
	ttl       time.Duration
	maxEvents uint64

	mu    sync.Mutex
	heads map[string]Head
	// lost: the sequence number of the last append of a stream that failed
	// without a verdict (it may or may not have landed).
	lost  map[string]uint64
	locks map[string]*streamLock
	// origins: the streams this process runs, by head key.
	origins map[string]*origin
}

type streamLock struct {
	mu   sync.Mutex
	refs int
}

// New is the log under opts.Prefix in the client's namespace.
func New(c *handlestore.Client, opts Options) *Log {
	if opts.Prefix == "" {
		opts.Prefix = Prefix
	}
	if opts.TTL <= 0 {
		opts.TTL = time.Hour
	}
	opts.TTL = max(opts.TTL, time.Second)
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 1000
	}
	opts.MaxEvents = max(opts.MaxEvents, Bucket)
	return &Log{
		client: c, state: c.StateTool(handlestore.StateToolOptions{}),
		prefix: strings.TrimSuffix(opts.Prefix, "/"), ttl: opts.TTL, maxEvents: uint64(opts.MaxEvents),
		heads: map[string]Head{}, lost: map[string]uint64{}, locks: map[string]*streamLock{},
		origins: map[string]*origin{},
	}
}

// CheckPrefix says why prefix cannot prefix the keys (nil if it can).
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return handlestore.CheckKey(strings.TrimSuffix(prefix, "/") + "/streams/x")
}

func scope(session string) string {
	if session == "" {
		return ""
	}
	return session + "\x00"
}

// HeadKey is the key of the head of stream in session.
func (l *Log) HeadKey(session, stream string) string {
	return l.prefix + "/streams/" + Digest(scope(session)+stream)
}

// TokenKey is the key naming the stream of token.
func (l *Log) TokenKey(token string) string { return l.prefix + "/tokens/" + token }

// StreamPrefix is the prefix of the events of the stream with token.
func (l *Log) StreamPrefix(token string) string { return l.prefix + "/events/" + token + "/" }

func (l *Log) bucketPrefix(token string, bucket uint64) string {
	return l.StreamPrefix(token) + padded(bucket, bucketWidth) + "/"
}

// EventKey is the key of event seq of the stream with token.
func (l *Log) EventKey(token string, seq uint64) string {
	return l.bucketPrefix(token, seq/Bucket) + padded(seq, seqWidth)
}

// SessionPrefix is the prefix of the streams of session.
func (l *Log) SessionPrefix(session string) string {
	return l.prefix + "/sessions/" + Digest(session) + "/"
}

// stored is an event's value: the message as it was given when it is JSON
// (null for none), else its bytes.
type stored struct {
	Message json.RawMessage `json:"message"`
	Bytes   []byte          `json:"bytes,omitempty"`
}

// eventValue is data as an event's value, byte for byte.
func eventValue(data []byte) json.RawMessage {
	if len(data) == 0 {
		return json.RawMessage(`{"message":null}`)
	}
	// JSON with nothing around it is kept as it is, so a replay gives back
	// the exact bytes; anything else is kept as bytes.
	if json.Valid(data) && len(bytes.TrimSpace(data)) == len(data) && string(data) != "null" {
		v := make([]byte, 0, len(data)+13)
		v = append(v, `{"message":`...)
		v = append(v, data...)
		return append(v, '}')
	}
	raw, _ := json.Marshal(stored{Message: json.RawMessage("null"), Bytes: data})
	return raw
}

func eventData(v handlestore.Value) ([]byte, error) {
	var s stored
	if err := v.Decode(&s); err != nil {
		return nil, err
	}
	if len(s.Bytes) > 0 {
		return s.Bytes, nil
	}
	if len(s.Message) == 0 || string(s.Message) == "null" {
		return nil, nil
	}
	return s.Message, nil
}

func (l *Log) lock(key string) func() {
	l.mu.Lock()
	sl := l.locks[key]
	if sl == nil {
		sl = &streamLock{}
		l.locks[key] = sl
	}
	sl.refs++
	l.mu.Unlock()
	sl.mu.Lock()
	return func() {
		sl.mu.Unlock()
		l.mu.Lock()
		if sl.refs--; sl.refs == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}

// Append stores data (nil: a priming event) as the next event of stream in
// session and gives the head after it. With live, this process is the
// stream's origin: the batch of the stream's first event writes its
// liveness record, refreshed every LiveRefresh until the batch of the
// event that completes the stream writes it expired, or until Release.
//
// After an append fails (refused, or not answered within the deadline),
// the next one re-reads the head: if the failed one did not land, its
// sequence number is left unused, so a stream's sequence numbers stay the
// positions of the events its SDK sent (go-sdk counts them itself) and a
// replay sees the gap instead of shifting the events after it.
func (l *Log) Append(ctx context.Context, session, stream string, data []byte, live *Live) (Head, error) {
	key := l.HeadKey(session, stream)
	unlock := l.lock(key)
	defer unlock()
	head, err := l.current(ctx, key, session, stream)
	if err != nil {
		return Head{}, err
	}
	value := eventValue(data)
	for attempt := 0; attempt < appendAttempts; attempt++ {
		first := head.Token == ""
		if first {
			head = Head{Token: handlestore.NewHandleID("")}
		}
		next := Head{Token: head.Token, Seq: head.Seq + 1}
		o, began := l.originFor(key, next.Token, session, first, live)
		items := l.appendItems(key, session, stream, head.Revision, next, value)
		items = append(items, l.liveChange(o, began, data)...)
		rev, err := l.state.BatchStore(ctx, items)
		if err == nil {
			next.Revision = rev
			l.advanced(ctx, key, next)
			l.landed(key, o, began, data, rev)
			return next, nil
		}
		if !errors.Is(err, handlestore.ErrRevisionMismatch) && !errors.Is(err, handlestore.ErrNotFound) {
			l.mu.Lock()
			l.lost[key] = next.Seq
			l.mu.Unlock()
			return Head{}, fmt.Errorf("event stream %s: %w", Shown(stream), err)
		}
		// Another writer appended: back off a little, read the head again.
		wait := time.Duration(rand.Int64N(int64(5*time.Millisecond) << min(attempt, 6)))
		select {
		case <-ctx.Done():
			return Head{}, context.Cause(ctx)
		case <-time.After(wait):
		}
		if head, _, err = l.Head(ctx, session, stream); err != nil {
			return Head{}, err
		}
	}
	return Head{}, fmt.Errorf("event stream %s: %d appends lost to other writers: %w", Shown(stream), appendAttempts, handlestore.ErrUnavailable)
}

// current is the head the next append moves: the one this process last
// wrote, else (or after a failed append) the cluster's.
func (l *Log) current(ctx context.Context, key, session, stream string) (Head, error) {
	l.mu.Lock()
	head, cached := l.heads[key]
	lost := l.lost[key]
	l.mu.Unlock()
	if cached && lost == 0 {
		return head, nil
	}
	h, _, err := l.Head(ctx, session, stream)
	if err != nil {
		return Head{}, err
	}
	// The failed append did not land: its number stays unused.
	if lost > h.Seq {
		h.Seq = lost
	}
	return h, nil
}

// originFor is the stream as this process runs it: a new one for its
// first event appended with live (began), else the one it keeps alive, if
// any.
func (l *Log) originFor(key, token, session string, first bool, live *Live) (o *origin, began bool) {
	if first && live != nil {
		return newOrigin(token, session, live), true
	}
	return l.opened(key, token), false
}

// liveChange is what the batch of an event of o writes of its liveness:
// the record and the requests with the stream's first event, the record
// expired with the event that completes it (nothing when the first event
// completes it: no follower has to wait for it).
func (l *Log) liveChange(o *origin, began bool, data []byte) []handlestore.StoreItem {
	if o == nil || began == o.pending.Completes(data) {
		return nil
	}
	return l.liveItems(o, began)
}

// landed records an appended event of o (at revision rev): a stream begun
// is kept alive until it completes.
func (l *Log) landed(key string, o *origin, began bool, data []byte, rev uint64) {
	if o == nil {
		return
	}
	complete := o.pending.Add(data)
	switch {
	case began && !complete:
		o.revision = rev
		l.begin(key, o)
	case !began && complete:
		l.end(key, o)
	}
}

// appendItems is one atomic batch: the head moves from revision to next
// (created if new), the event is written, the token names the stream (and
// the session lists it).
func (l *Log) appendItems(key, session, stream string, revision uint64, next Head, value json.RawMessage) []handlestore.StoreItem {
	headValue, _ := json.Marshal(next)
	items := []handlestore.StoreItem{
		{Key: key, Value: json.RawMessage(headValue), TTL: l.ttl, If: handlestore.IfRevision(revision)},
		{Key: l.EventKey(next.Token, next.Seq), Value: value, TTL: l.ttl},
		{Key: l.TokenKey(next.Token), Value: stream, TTL: l.ttl},
	}
	if session != "" {
		items = append(items, handlestore.StoreItem{Key: l.SessionPrefix(session) + next.Token, Value: stream, TTL: l.ttl})
	}
	return items
}

// advanced remembers the head and, when a bucket fills, deletes the one
// that left the window (best effort: the TTL removes it anyway).
func (l *Log) advanced(ctx context.Context, key string, head Head) {
	l.mu.Lock()
	if len(l.heads) >= headsCap {
		clear(l.heads)
	}
	l.heads[key] = head
	delete(l.lost, key)
	l.mu.Unlock()
	buckets := (l.maxEvents + Bucket - 1) / Bucket
	bucket := head.Seq / Bucket
	if head.Seq%Bucket != 0 || bucket <= buckets {
		return
	}
	_, _ = l.state.DeletePrefix(ctx, l.bucketPrefix(head.Token, bucket-buckets-1), Bucket)
}

// Head is the head of stream in session; false if the stream does not
// exist (never written, expired or purged).
func (l *Log) Head(ctx context.Context, session, stream string) (Head, bool, error) {
	e, err := l.state.Retrieve(ctx, l.HeadKey(session, stream))
	if err != nil || e == nil {
		return Head{}, false, err
	}
	var h Head
	if err := e.Value.Decode(&h); err != nil || !isToken(h.Token) {
		return Head{}, false, fmt.Errorf("event stream %s: unreadable head: %w", Shown(stream), handlestore.ErrCodec)
	}
	h.Revision = e.ModRevision
	return h, true, nil
}

func isToken(s string) bool {
	_, _, ok := ParseEventID(s + ".0")
	return ok
}

// StreamOf is the stream the token names; false if there is none (or no
// longer).
func (l *Log) StreamOf(ctx context.Context, token string) (string, bool, error) {
	if !isToken(token) {
		return "", false, nil
	}
	var stream string
	ok, err := l.state.Get(ctx, l.TokenKey(token), &stream)
	if errors.Is(err, handlestore.ErrCodec) {
		return "", false, nil
	}
	return stream, ok && err == nil, err
}

// After is the stored events of the stream with token after seq, in order,
// read page by page.
func (l *Log) After(ctx context.Context, token string, seq uint64) ([]Event, error) {
	evs, _, err := l.afterAt(ctx, token, seq)
	return evs, err
}

// afterAt is After and the revision it read at.
func (l *Log) afterAt(ctx context.Context, token string, seq uint64) ([]Event, uint64, error) {
	var out []Event
	opts := handlestore.ListOptions{Limit: replayPage, WithValues: true, PageToken: PageTokenAfter(l.EventKey(token, seq))}
	for {
		page, err := l.state.List(ctx, l.StreamPrefix(token), opts)
		if err != nil {
			return nil, 0, err
		}
		for _, e := range page.Entries {
			ev, ok, err := eventOf(token, e.Key, e.Value)
			if err != nil {
				return nil, 0, err
			}
			if ok {
				out = append(out, ev)
			}
		}
		if page.NextPageToken == "" {
			return out, page.ReadRevision, nil
		}
		at := handlestore.AtLeast(page.ReadRevision)
		opts.PageToken, opts.Consistency = page.NextPageToken, &at
	}
}

// eventOf is the event stored at key (false for a key that is not an
// event's).
func eventOf(token, key string, v handlestore.Value) (Event, bool, error) {
	n, err := strconv.ParseUint(key[strings.LastIndexByte(key, '/')+1:], 10, 64)
	if err != nil {
		return Event{}, false, nil
	}
	data, err := eventData(v)
	if err != nil {
		return Event{}, false, fmt.Errorf("event %s: %w", FormatEventID(token, n), err)
	}
	return Event{Seq: n, Data: data}, true, nil
}

// PurgeSession deletes every stream of session: its events, token and head
// (best effort beyond the first error: the TTL removes what is left).
func (l *Log) PurgeSession(ctx context.Context, session string) error {
	if session == "" {
		return nil
	}
	// This process writes nothing more to them.
	released := l.ReleaseSession(ctx, session)
	type member struct{ token, stream string }
	var members []member
	for e, err := range l.state.Scan(ctx, l.SessionPrefix(session), handlestore.ListOptions{WithValues: true}) {
		if err != nil {
			return err
		}
		var stream string
		if e.Value.Decode(&stream) == nil {
			members = append(members, member{e.Key[strings.LastIndexByte(e.Key, '/')+1:], stream})
		}
	}
	errs := []error{released}
	for _, m := range members {
		key := l.HeadKey(session, m.stream)
		l.mu.Lock()
		delete(l.heads, key)
		delete(l.lost, key)
		l.mu.Unlock()
		for {
			d, err := l.state.DeletePrefix(ctx, l.StreamPrefix(m.token), purgeLimit)
			if err != nil {
				errs = append(errs, err)
				break
			}
			if !d.More {
				break
			}
		}
		for _, k := range []string{l.TokenKey(m.token), l.LiveKey(m.token), l.RequestsKey(m.token)} {
			if _, err := l.state.Delete(ctx, k, nil); err != nil {
				errs = append(errs, err)
			}
		}
		if _, err := l.state.Delete(ctx, key, nil); err != nil {
			errs = append(errs, err)
		}
	}
	if errors.Join(errs...) == nil {
		if _, err := l.state.DeletePrefix(ctx, l.SessionPrefix(session), purgeLimit); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
