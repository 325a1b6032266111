package testkit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// Front is an HTTP load balancer in front of MCP server replicas, for the
// tests of the MCP SDK seams: it sends each request to the replica it
// points at (or, RoundRobin, to the next one), streams the response back,
// and Cut ends every response under way there and then, cleanly for the
// client (as a server ending an SSE stream) and by cancelling the
// request for the replica (as a client that went away).
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
}

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

func (f *Front) record(h Hit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits = append(f.hits, h)
}
