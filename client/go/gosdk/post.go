package gosdk

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

// The POST side of Resume.
//
// go-sdk's stateless handler serves each POST on a session of its own and
// closes it once the request's HTTP response ends (serveStateless: `defer
// session.Close()`). When the client goes away mid-call, the response ends
// at once (hangResponse returns on the request context), the session's
// jsonrpc2 connection starts closing, and from then on it refuses every
// write of a response (jsonrpc2's Connection.write fails with
// ErrServerClosing before the transport, so the event store never sees
// it): the call's result is lost while its notifications, still allowed,
// are stored. The seam is the request context: Resume gives the SDK one
// that the client's going does not cancel, so the response waits for the
// call's result, stores it, and only then the session closes. The tool
// runs exactly as long as before (Close waits for it anyway), and its
// context is not the request's (go-sdk detaches it below protocol
// 2026-07-28), so nothing else changes.
//
// go-sdk's stateful handler keeps a session past its POST, so a cut call's
// result is stored there already; its POSTs are not detached (a detached
// POST would hold the stream, and a resumption on the same replica would
// get 409).

// maxIDsBody bounds the body Resume reads to learn the request ids; a
// larger one passes unread (its stream's requests are then unknown).
const maxIDsBody = 16 << 20

// releaseTimeout bounds the deletion of a liveness record when a POST
// ends.
const releaseTimeout = 10 * time.Second

// newProtocol is the first protocol version without resumable streams
// (SEP-2575): go-sdk stores no event of it.
const newProtocol = "2026-07-28"

type postKey struct{}

// post is a POST Resume passed to the SDK: the ids of the requests in its
// body and the stateless streams it opened (of no session, or of any with
// KeepOnSessionClosed), released when it ends: the SDK's stateless
// handler closes the POST's session before the POST ends.
type post struct {
	ids  []json.RawMessage
	keep bool

	mu      sync.Mutex
	ended   bool
	streams [][2]string // session, stream
}

func postOf(ctx context.Context) *post {
	p, _ := ctx.Value(postKey{}).(*post)
	return p
}

// opened says whether a stream appended in this POST's context is its own
// (the POST is still running: a stateful session's later requests carry
// the context of the POST that initialized it), and notes it.
func (p *post) opened(session, stream string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return false
	}
	if s := [2]string{session, stream}; (session == "" || p.keep) && !slices.Contains(p.streams, s) {
		p.streams = append(p.streams, s)
	}
	return true
}

// end is the streams to release once the POST ended.
func (p *post) end() [][2]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	return p.streams
}

// servePOST passes r to the SDK with its request ids in the context,
// detached from the client's connection where the handler is stateless
// (no session: go-sdk's default stateless mode; or every request, with
// KeepOnSessionClosed), and releases the stateless streams it opened once
// the SDK is done with it: they can get no more events.
func (h *resumer) servePOST(w http.ResponseWriter, r *http.Request) {
	p := &post{ids: requestIDs(r), keep: h.store.keep}
	ctx := context.WithValue(r.Context(), postKey{}, p)
	if r.Header.Get(protocolHeader) < newProtocol && (r.Header.Get(sessionHeader) == "" || h.store.keep) {
		ctx = context.WithoutCancel(ctx)
	}
	h.next.ServeHTTP(w, r.WithContext(ctx))
	for _, s := range p.end() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), releaseTimeout)
		_ = h.store.log.Release(ctx, s[0], s[1])
		cancel()
	}
}

// requestIDs reads the ids of the requests in r's body, leaving the body
// as it was for the SDK.
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
