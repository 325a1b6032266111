package testkit

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// Front is an HTTP load balancer in front of MCP server replicas, for the
// tests of the MCP SDK seams: it sends each request to the replica it
// points at (or, RoundRobin, to the next one), streams the response back
// (an event stream one whole SSE event at a time), and Cut ends every
// response under way there and then, cleanly for the client (as a server
// ending an SSE stream) and by cancelling the request for the replica (as
// a client that went away); CutAfter does it to the next event stream
// after a number of its events.
type Front struct {
	URL string

	mu         sync.Mutex
	targets    []*url.URL
	current    int
	roundRobin bool
	next       int
	live       map[*cut]struct{}
	hits       []Hit
	srv        *httptest.Server
	// armed: CutAfter's, for the next event stream.
	armed *cutAfter
	// delivered: the events with data forwarded to clients.
	delivered []string
}

type cutAfter struct{ k, then int }

// Hit is one request the front forwarded.
type Hit struct {
	Replica     int
	Method      string
	LastEventID string
	Status      int
}

type cut struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func (c *cut) fire() { c.once.Do(func() { close(c.done); c.cancel() }) }

// NewFront is a front before the replicas at these base URLs (the MCP
// endpoint's path is the request's), pointing at the first; it stops with
// the test.
func NewFront(t testing.TB, replicas ...string) *Front {
	t.Helper()
	f := &Front{live: map[*cut]struct{}{}}
	for _, r := range replicas {
		u, err := url.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		f.targets = append(f.targets, u)
	}
	f.srv = httptest.NewServer(f)
	f.URL = f.srv.URL
	t.Cleanup(func() {
		f.Cut()
		f.srv.Close()
	})
	return f
}

// Point sends the next requests to replica i.
func (f *Front) Point(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current, f.roundRobin = i, false
}

// RoundRobin sends each request to the next replica.
func (f *Front) RoundRobin() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roundRobin = true
}

// Cut ends every response under way.
func (f *Front) Cut() {
	f.mu.Lock()
	live := make([]*cut, 0, len(f.live))
	for c := range f.live {
		live = append(live, c)
	}
	f.mu.Unlock()
	for _, c := range live {
		c.fire()
	}
}

// CutAfter arms the front: the next event stream it forwards (a response
// of type text/event-stream) is cut once k message events (events with
// data: a priming event or a comment does not count) went through, before
// the next one is sent, and from then on requests go to replica then.
// With k = 0 it is cut before its first message event. The cut is Cut's,
// for that response alone.
func (f *Front) CutAfter(k, then int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = &cutAfter{k, then}
}

// claim takes CutAfter's arming for an event stream, if any.
func (f *Front) claim() *cutAfter {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.armed
	f.armed = nil
	return a
}

// Delivered is every event with data the front forwarded to a client, on
// any response, in the order it sent them: what the clients received,
// with duplicates if a replica sent any.
func (f *Front) Delivered() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.delivered...)
}

// Hits are the requests forwarded so far.
func (f *Front) Hits() []Hit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Hit(nil), f.hits...)
}

func (f *Front) pick() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.roundRobin {
		return f.current
	}
	i := f.next % len(f.targets)
	f.next++
	return i
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := f.pick()
	ctx, cancel := context.WithCancel(r.Context())
	c := &cut{cancel: cancel, done: make(chan struct{})}
	f.mu.Lock()
	f.live[c] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.live, c)
		f.mu.Unlock()
		cancel()
	}()
	out := r.Clone(ctx)
	out.RequestURI = ""
	target := *f.targets[i]
	target.Path, target.RawQuery = r.URL.Path, r.URL.RawQuery
	out.URL, out.Host = &target, target.Host
	resp, err := http.DefaultTransport.RoundTrip(out)
	hit := Hit{Replica: i, Method: r.Method, LastEventID: r.Header.Get("Last-Event-ID")}
	if err != nil {
		hit.Status = http.StatusBadGateway
		f.record(hit)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	hit.Status = resp.StatusCode
	f.record(hit)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media == "text/event-stream" {
		f.events(w, rc, resp.Body, c)
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		select {
		case <-c.done:
			return // cut: what was read after the cut is not sent
		default:
		}
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return // io.EOF: the replica ended the response
		}
	}
}

// events forwards an event stream one whole event at a time, cut where
// Cut or CutAfter says.
func (f *Front) events(w http.ResponseWriter, rc *http.ResponseController, body io.Reader, c *cut) {
	arm := f.claim()
	br := bufio.NewReader(body)
	sent := 0
	for {
		ev, data, err := readEvent(br)
		select {
		case <-c.done:
			return
		default:
		}
		if data && arm != nil && sent == arm.k {
			f.Point(arm.then)
			return
		}
		if data {
			// Noted before it is written, so it is in Delivered by the time
			// the client acts on it.
			sent++
			f.mu.Lock()
			f.delivered = append(f.delivered, string(ev))
			f.mu.Unlock()
		}
		if len(ev) > 0 {
			if _, werr := w.Write(ev); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// readEvent reads one SSE event (through its blank line) and says whether
// it carries data.
func readEvent(br *bufio.Reader) (ev []byte, data bool, err error) {
	for {
		line, err := br.ReadBytes('\n')
		ev = append(ev, line...)
		field := bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(field, []byte("data:")); ok && len(bytes.TrimSpace(v)) > 0 {
			data = true
		}
		if err != nil || (len(field) == 0 && len(ev) > len(line)) {
			return ev, data, err
		}
		if len(field) == 0 {
			ev = ev[:0] // a blank line before any field
		}
	}
}

func (f *Front) record(h Hit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits = append(f.hits, h)
}
