package gosdk_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/gosdk"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// replica is one go-sdk server process's worth: its own handlestore
// client and store, the SDK's StreamableHTTPHandler behind Resume, on its
// own HTTP server.
type replica struct {
	url   string
	store *gosdk.EventStore
	hs    *handlestore.Client
	srv   *httptest.Server
	// cmds drive the emitter tool: a notification per command, until
	// "return".
	cmds chan string
	// release ends the script tool's hold.
	release chan struct{}
}

// script is the script tool's arguments: count progress notifications,
// gapMs apart, then (with hold) wait for the replica's release.
type script struct {
	Count int  `json:"count"`
	GapMs int  `json:"gapMs"`
	Hold  bool `json:"hold"`
}

func newReplica(t *testing.T, c *testkit.Cluster, ns string, stateless bool) *replica {
	t.Helper()
	hs := c.Client(handlestore.Config{Namespace: ns})
	r := &replica{
		store: testkit.Must[*gosdk.EventStore](t)(gosdk.NewEventStore(hs, gosdk.EventStoreOptions{})),
		hs:    hs, cmds: make(chan string, 64), release: make(chan struct{}),
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "emitter", Version: "0.1.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "emitter"}, r.emitter)
	mcp.AddTool(server, &mcp.Tool{Name: "script"}, r.script)
	getServer := func(*http.Request) *mcp.Server { return server }
	handler := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: stateless, EventStore: r.store})
	r.srv = httptest.NewServer(r.store.Resume(handler))
	t.Cleanup(func() {
		close(r.release)
		close(r.cmds)
		r.srv.CloseClientConnections()
		r.srv.Close()
	})
	r.url = r.srv.URL
	return r
}

func (r *replica) emitter(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	n := 0
	for cmd := range r.cmds {
		if cmd == "return" {
			break
		}
		n++
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: float64(n), Message: cmd,
		})
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
}

func (r *replica) script(ctx context.Context, req *mcp.CallToolRequest, in script) (*mcp.CallToolResult, any, error) {
	for i := 1; i <= in.Count; i++ {
		if i > 1 {
			time.Sleep(time.Duration(in.GapMs) * time.Millisecond)
		}
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Message: strconv.Itoa(i),
		})
	}
	if in.Hold {
		<-r.release
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
}

// kill stops the replica as a crash would: no request reaches it, no
// response leaves it, and nothing more of it reaches the cluster (its
// appends and liveness refreshes fail). Its tools run on, unheard.
func (r *replica) kill() {
	_ = r.srv.Config.Close()
	_ = r.hs.Close()
}

// progress records the progress notifications a client hears.
type progress struct{ *testkit.Heard }

func newProgress() *progress { return &progress{testkit.NewHeard()} }

func (p *progress) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.Add(req.Params.Message)
}

func connect(t *testing.T, ctx context.Context, url string, p *progress, protocol string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "resumer", Version: "0.1.0"}, &mcp.ClientOptions{ProgressNotificationHandler: p.handler})
	// No standalone GET stream: the session's own one lives on the replica
	// that holds the session (go-sdk has no session store).
	transport := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", DisableStandaloneSSE: true, MaxRetries: 20}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type called struct {
	res *mcp.CallToolResult
	err error
}

func callEmitter(ctx context.Context, cs *mcp.ClientSession) chan called {
	done := make(chan called, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "emitter", Arguments: map[string]any{}}
		params.SetProgressToken("p")
		res, err := cs.CallTool(ctx, params)
		done <- called{res, err}
	}()
	return done
}

func resultText(t *testing.T, c called) string {
	t.Helper()
	if c.err != nil {
		t.Fatal(c.err)
	}
	if len(c.res.Content) != 1 {
		t.Fatalf("result %+v", c.res)
	}
	return c.res.Content[0].(*mcp.TextContent).Text
}

// resumes are the GETs with Last-Event-ID the front forwarded, as
// "<replica> <status>".
func resumes(f *testkit.Front) []string {
	var out []string
	for _, h := range f.Hits() {
		if h.Method == http.MethodGet && h.LastEventID != "" {
			out = append(out, fmt.Sprintf("%d %d", h.Replica, h.Status))
		}
	}
	return out
}

func TestAStreamCutOnOneReplicaResumesOnAnother(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})

	t.Run("stateful: every event after the cut, in order, once", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		a, b := newReplica(t, c, "gosdk-resume-1", false), newReplica(t, c, "gosdk-resume-1", false)
		front := testkit.NewFront(t, a.url, b.url)
		p := newProgress()
		cs := connect(t, ctx, front.URL, p, "")
		done := callEmitter(ctx, cs)
		for _, m := range []string{"1", "2", "3"} {
			a.cmds <- m
		}
		p.Wait(t, 3)

		// The load balancer loses the stream and sends the reconnection to
		// B; A's request goes on, its events stored as they go.
		front.Point(1)
		front.Cut()
		// Nothing new is stored for longer than the client's reconnection
		// takes: the replay on B starts empty, and must not end the call
		// (the regression).
		time.Sleep(3 * time.Second)
		for _, m := range []string{"4", "5", "6", "7", "return"} {
			a.cmds <- m
		}
		if got := resultText(t, <-done); got != "done" {
			t.Fatalf("result %q", got)
		}
		// The client hands notifications to their handler on goroutines of
		// their own: wait for them, and a little for any extra one.
		p.Wait(t, 7)
		time.Sleep(200 * time.Millisecond)
		if got := p.Got(); !slices.Equal(got, []string{"1", "2", "3", "4", "5", "6", "7"}) {
			t.Fatalf("heard %v: a gap or a duplicate", got)
		}
		rs := resumes(front)
		if len(rs) == 0 || slices.ContainsFunc(rs, func(r string) bool { return r != "1 200" }) {
			t.Fatalf("resumptions %v, want all on B (1) and served", rs)
		}
		if b.store.Replays() == 0 || a.store.Replays() != 0 {
			t.Fatalf("replays: A %d, B %d", a.store.Replays(), b.store.Replays())
		}

		// Any replica replays exactly the events after a given one.
		var last string
		for _, h := range front.Hits() {
			if h.LastEventID != "" {
				last = h.LastEventID
			}
		}
		stream := last[:strings.LastIndexByte(last, '_')]
		for _, r := range []*replica{a, b} {
			ids, msgs := getSSE(t, ctx, r.url, cs.ID(), stream+"_2")
			wantIDs := []string{stream + "_3", stream + "_4", stream + "_5", stream + "_6", stream + "_7", stream + "_8"}
			if !slices.Equal(ids, wantIDs) {
				t.Fatalf("replay after %s_2: ids %v, want %v", stream, ids, wantIDs)
			}
			for i, m := range msgs[:5] {
				if !strings.Contains(m, fmt.Sprintf(`"message":"%d"`, i+3)) {
					t.Fatalf("event %s: %s", ids[i], m)
				}
			}
			if !strings.Contains(msgs[5], `"done"`) {
				t.Fatalf("the last event is not the result: %s", msgs[5])
			}
		}
	})

	t.Run("stateless: the result of a request whose stream was cut", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		a, b := newReplica(t, c, "gosdk-resume-2", true), newReplica(t, c, "gosdk-resume-2", true)
		front := testkit.NewFront(t, a.url, b.url)
		p := newProgress()
		// From protocol 2026-07-28 (SEP-2575) streams are not resumable.
		cs := connect(t, ctx, front.URL, p, "2025-11-25")
		done := callEmitter(ctx, cs)
		for _, m := range []string{"1", "2"} {
			a.cmds <- m
		}
		p.Wait(t, 2)
		front.Point(1)
		front.Cut()
		// The tool goes on after its client went away: what it sends and
		// its result are stored, and B sends them (the regression:
		// the SDK dropped the result once the client had gone).
		time.Sleep(500 * time.Millisecond)
		a.cmds <- "3"
		a.cmds <- "return"
		if got := resultText(t, <-done); got != "done" {
			t.Fatalf("result %q", got)
		}
		p.Wait(t, 3)
		if got := p.Got(); !slices.Equal(got, []string{"1", "2", "3"}) {
			t.Fatalf("heard %v", got)
		}
		if rs := resumes(front); len(rs) == 0 || slices.ContainsFunc(rs, func(r string) bool { return r != "1 200" }) {
			t.Fatalf("resumptions %v, want all on B (1) and served", rs)
		}
		// A stateless handler alone refuses every GET.
		req := testkit.Must[*http.Request](t)(http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/mcp", nil))
		req.Header.Set("Accept", "text/event-stream")
		resp := testkit.Must[*http.Response](t)(http.DefaultClient.Do(req))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("a GET without Last-Event-ID: %d", resp.StatusCode)
		}
	})

	t.Run("a malformed or unknown Last-Event-ID is the SDK's 400", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		b := newReplica(t, c, "gosdk-resume-3", true)
		for _, id := range []string{"garbage", "a_b_c", "x_-1", "_", "NOSUCHSTREAM_3"} {
			status, body := getStatus(t, ctx, b.url, "", id)
			if status != http.StatusBadRequest {
				t.Errorf("Last-Event-ID %q: %d %s", id, status, body)
			}
		}
	})
}

func TestAMalformedLastEventIDMakesNoCall(t *testing.T) {
	dead := testkit.Must[*handlestore.Client](t)(handlestore.New(handlestore.Config{Endpoints: []string{"127.0.0.1:1"}, CallTimeout: 5 * time.Second}))
	defer dead.Close()
	store := testkit.Must[*gosdk.EventStore](t)(gosdk.NewEventStore(dead, gosdk.EventStoreOptions{}))
	server := mcp.NewServer(&mcp.Implementation{Name: "x", Version: "0.1.0"}, nil)
	getServer := func(*http.Request) *mcp.Server { return server }
	handler := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true, EventStore: store})
	srv := httptest.NewServer(store.Resume(handler))
	defer srv.Close()
	start := time.Now()
	status, body := getStatus(t, testkit.Ctx(t), srv.URL, "", "not-an-event-id")
	if status != http.StatusBadRequest || !strings.Contains(body, "malformed Last-Event-ID") || time.Since(start) > 2*time.Second {
		t.Fatalf("%d %q after %v", status, body, time.Since(start))
	}
}

func getStatus(t *testing.T, ctx context.Context, url, session, lastEventID string) (int, string) {
	t.Helper()
	resp := get(t, ctx, url, session, lastEventID)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func get(t *testing.T, ctx context.Context, url, session, lastEventID string) *http.Response {
	t.Helper()
	req := testkit.Must[*http.Request](t)(http.NewRequestWithContext(ctx, http.MethodGet, url+"/mcp", nil))
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", lastEventID)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	return testkit.Must[*http.Response](t)(http.DefaultClient.Do(req))
}

// getSSE resumes with a raw GET and reads the replay to its end.
func getSSE(t *testing.T, ctx context.Context, url, session, lastEventID string) (ids, data []string) {
	t.Helper()
	resp := get(t, ctx, url, session, lastEventID)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET with Last-Event-ID %s: %d %s", lastEventID, resp.StatusCode, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, v)
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, v)
		}
	}
	return ids, data
}
