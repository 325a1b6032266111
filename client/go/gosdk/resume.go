package gosdk

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resume wraps the SDK's handler (an mcp.StreamableHTTPHandler with this
// store as its EventStore) so that a GET with Last-Event-ID resumes on
// this replica a stream another replica started: where the SDK's handler
// refuses it (404 for a session this replica does not hold, 405 from a
// stateless handler, which serves no GET), the stored events after
// Last-Event-ID are sent from the cluster by the SDK's own transport, and
// the response ends; the SDK's client reconnects for more until it has its
// response. Everything else, and a resumption the handler serves itself
// (its session is here), goes to next unchanged.
//
// getServer is the handler's: the server whose transport sends the
// replay. A malformed Last-Event-ID is the SDK's 400 before any call; an
// unknown stream or a gap, 400 after one read.
//
// The replay is served to whoever presents the session id (if any) and a
// Last-Event-ID of the stream: both are random 128-bit values minted by
// the SDK, but the user a stateful session is bound to is not checked
// here, only on the replica that holds the session.
func (s *EventStore) Resume(next http.Handler, getServer func(*http.Request) *mcp.Server) http.Handler {
	return &resumer{store: s, next: next, getServer: getServer}
}

// Replays is how many resumptions this process served from the cluster
// (those next refused), for tests and metrics.
func (s *EventStore) Replays() uint64 { return s.replays.Load() }

type resumer struct {
	store     *EventStore
	next      http.Handler
	getServer func(*http.Request) *mcp.Server
}

const lastEventIDHeader = "Last-Event-ID"

func (h *resumer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || len(r.Header.Values(lastEventIDHeader)) == 0 {
		h.next.ServeHTTP(w, r)
		return
	}
	p := &probe{w: w, header: http.Header{}}
	h.next.ServeHTTP(p, r)
	if p.refused {
		h.replay(w, r)
	}
}

// replay serves the GET with a transport of its own, connected to the
// server for this request only, over a view of the store that keeps the
// session when that transport closes.
func (h *resumer) replay(w http.ResponseWriter, r *http.Request) {
	server := h.getServer(r)
	if server == nil {
		http.Error(w, "no server available", http.StatusBadRequest)
		return
	}
	h.store.replays.Add(1)
	t := &mcp.StreamableServerTransport{
		SessionID:  r.Header.Get("Mcp-Session-Id"),
		EventStore: replayOnly{h.store},
	}
	session, err := server.Connect(r.Context(), t, nil)
	if err != nil {
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return
	}
	defer session.Close()
	t.ServeHTTP(w, r)
}

// replayOnly is the store for a replay's transport: closing it closes no
// session.
type replayOnly struct{ *EventStore }

func (replayOnly) SessionClosed(context.Context, string) error { return nil }

// probe passes next's response through, unless next refuses the GET
// (404: not its session; 405: a stateless handler): that refusal is
// dropped, so the replay can answer instead.
type probe struct {
	w       http.ResponseWriter
	header  http.Header
	decided bool
	refused bool
}

func (p *probe) Header() http.Header {
	if p.decided && !p.refused {
		return p.w.Header()
	}
	return p.header
}

func (p *probe) WriteHeader(code int) {
	if p.decided {
		return
	}
	p.decided = true
	if code == http.StatusNotFound || code == http.StatusMethodNotAllowed {
		p.refused = true
		return
	}
	for k, v := range p.header {
		p.w.Header()[k] = v
	}
	p.w.WriteHeader(code)
}

func (p *probe) Write(b []byte) (int, error) {
	if !p.decided {
		p.WriteHeader(http.StatusOK)
	}
	if p.refused {
		return len(b), nil
	}
	return p.w.Write(b)
}

func (p *probe) Flush() {
	if p.decided && !p.refused {
		_ = http.NewResponseController(p.w).Flush()
	}
}

func (p *probe) Unwrap() http.ResponseWriter { return p.w }
