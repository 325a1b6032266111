package mcpgo

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/handlestore/handlestore/client/go/internal/mcpevents"
)

// Resume wraps mcp-go's StreamableHTTPServer (with this store as its
// event store) for a fleet of replicas behind a load balancer:
//
//   - a POST reaches mcp-go with the ids of its request in its context, so
//     the store names them in the stream's liveness record (a follower
//     answers them with origin_lost if this replica dies first), and the
//     record is dropped when the POST ends;
//   - a GET with Last-Event-ID for a stream another replica runs is
//     followed: mcp-go replays it through ReplayEventsAfter and ends the
//     response (the stream is not its own); the store keeps that call
//     going, sending every event the running replica stores, as it stores
//     it, until the call's response, or the origin_lost error responses if
//     that replica stops first (docs/dev/resume.md). mcp-go bounds a replay
//     with a write deadline (30 s in v1.2.1); while following, the store
//     gives every write that long instead of the whole resumption.
//
// Without Resume the store replays what is stored and mcp-go ends the
// response: mcp-go's client polls again (every second, without end).
func (s *EventStore) Resume(next http.Handler) http.Handler {
	return &resumer{store: s, next: next}
}

type resumer struct {
	store *EventStore
	next  http.Handler
}

// maxIDsBody bounds the body Resume reads to learn the request ids; a
// larger one passes unread (its stream's requests are then unknown).
const maxIDsBody = 16 << 20

// releaseTimeout bounds the deletion of a liveness record when a POST
// ends.
const releaseTimeout = 10 * time.Second

func (h *resumer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost:
		p := &post{ids: requestIDs(r)}
		h.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), postKey{}, p)))
		for _, st := range p.end() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), releaseTimeout)
			_ = h.store.log.Release(ctx, st[0], st[1])
			cancel()
		}
	case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "":
		rw := &resumeWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
		h.next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), resumeKey{}, rw)))
	default:
		h.next.ServeHTTP(w, r)
	}
}

type postKey struct{}

// post is a POST Resume passed to mcp-go: the ids of the requests in its
// body, and the streams it opened, which can get no more events once it
// ends.
type post struct {
	ids []json.RawMessage

	mu      sync.Mutex
	ended   bool
	streams [][2]string // session, stream
}

func postOf(ctx context.Context) *post {
	p, _ := ctx.Value(postKey{}).(*post)
	return p
}

// opened notes a stream appended in the POST's context, and says whether
// the POST still runs.
func (p *post) opened(session, stream string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := [2]string{session, stream}; !p.ended && !slices.Contains(p.streams, s) {
		p.streams = append(p.streams, s)
	}
	return !p.ended
}

func (p *post) end() [][2]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	return p.streams
}

// requestIDs reads the ids of the requests in r's body, leaving the body
// as it was for mcp-go.
func requestIDs(r *http.Request) []json.RawMessage {
	if r.Body == nil {
		return nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, maxIDsBody+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > maxIDsBody {
		return nil
	}
	return mcpevents.RequestIDs(head)
}

type resumeKey struct{}

// resumeWriter is a resumption's response: mcp-go looks the stream up
// (one ReplayEventsAfter that sends nothing) before it writes the
// response's header, then replays it; the store follows only in the
// replay, once the header is out.
type resumeWriter struct {
	http.ResponseWriter
	rc *http.ResponseController

	mu      sync.Mutex
	started bool
	// deadline: the write deadline mcp-go set, given to each write.
	deadline time.Duration
}

func resumingOf(ctx context.Context) *resumeWriter {
	w, _ := ctx.Value(resumeKey{}).(*resumeWriter)
	return w
}

func (w *resumeWriter) WriteHeader(code int) {
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *resumeWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.started = true
	d := w.deadline
	w.mu.Unlock()
	if d > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(d))
	}
	return w.ResponseWriter.Write(b)
}

func (w *resumeWriter) Flush() { _ = w.rc.Flush() }

// SetWriteDeadline keeps mcp-go's bound for every later write: a follower
// writes for as long as the call runs.
func (w *resumeWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	w.deadline = 0
	if !t.IsZero() {
		w.deadline = time.Until(t)
	}
	w.mu.Unlock()
	return w.rc.SetWriteDeadline(t)
}

func (w *resumeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *resumeWriter) isStarted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started
}

// keepalive is an SSE comment: mcp-go's client skips it.
func (w *resumeWriter) keepalive() error {
	if _, err := w.Write([]byte(": keepalive\n\n")); err != nil {
		return err
	}
	return w.rc.Flush()
}
