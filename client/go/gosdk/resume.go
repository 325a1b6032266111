package gosdk

import (
	"net/http"
)

// Resume wraps the SDK's handler (an mcp.StreamableHTTPHandler with this
// store as its EventStore) for a fleet of replicas behind a load balancer:
//
//   - a POST reaches the SDK with the ids of its requests in its context,
//     so the store names them in the stream's liveness record, and, for a
//     stateless handler, detached from the client's connection, so the
//     result of a call whose client went away is stored like any event
//     (go-sdk's stateless handler drops it otherwise: see post.go);
//   - a GET with Last-Event-ID that the SDK's handler refuses (404 for a
//     session this replica does not hold, 405 from a stateless handler,
//     which serves no GET) is served from the cluster: the stored events
//     after Last-Event-ID, then every event the replica running the call
//     stores after them, as it stores them, until the call's response; if
//     that replica stops first (its liveness record expires, at most
//     mcpevents.LiveTTL after its last refresh), an origin_lost error
//     response for the call (docs/dev/resume.md). The response never ends
//     before that: go-sdk's client takes a resumed response that ends
//     without an event as the end of the call.
//
// Everything else, and a resumption the handler serves itself (its session
// is here), goes to next unchanged. A malformed Last-Event-ID is the SDK's
// 400 before any call; an unknown stream or a gap, 400 after one read.
//
// The resumption is served to whoever presents the session id (if any)
// and a Last-Event-ID of the stream: both are random 128-bit values minted
// by the SDK, but the user a stateful session is bound to is not checked
// here, only on the replica that holds the session.
func (s *EventStore) Resume(next http.Handler) http.Handler {
	return &resumer{store: s, next: next}
}

// Replays is how many resumptions this process served from the cluster
// (those next refused), for tests and metrics.
func (s *EventStore) Replays() uint64 { return s.replays.Load() }

type resumer struct {
	store *EventStore
	next  http.Handler
}

const (
	lastEventIDHeader = "Last-Event-ID"
	sessionHeader     = "Mcp-Session-Id"
	protocolHeader    = "Mcp-Protocol-Version"
)

func (h *resumer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost:
		h.servePOST(w, r)
	case r.Method == http.MethodGet && len(r.Header.Values(lastEventIDHeader)) > 0:
		p := &probe{w: w, header: http.Header{}}
		h.next.ServeHTTP(p, r)
		if p.refused {
			h.follow(w, r)
		}
	default:
		h.next.ServeHTTP(w, r)
	}
}

// probe passes next's response through, unless next refuses the GET
// (404: not its session; 405: a stateless handler): that refusal is
// dropped, so the follower can answer instead.
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
