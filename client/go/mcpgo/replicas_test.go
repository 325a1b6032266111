package mcpgo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
	"github.com/handlestore/handlestore/client/go/mcpgo"
)

// replica is one mcp-go server process's worth: its own handlestore
// client, event store and session id manager, on its own HTTP server,
// behind the store's Resume.
type replica struct {
	url   string
	store *recordingStore
	cmds  chan string
	http  *server.StreamableHTTPServer
	hs    *handlestore.Client
	srv   *httptest.Server
	// release ends the script tool's hold.
	release chan struct{}
}

func newReplica(t *testing.T, c *testkit.Cluster, ns string) *replica {
	t.Helper()
	hs := c.Client(handlestore.Config{Namespace: ns})
	sessions := testkit.Must[*mcpgo.SessionIdManager](t)(mcpgo.NewSessionIdManager(hs, mcpgo.SessionOptions{}))
	events := testkit.Must[*mcpgo.EventStore](t)(mcpgo.NewEventStore(hs, mcpgo.EventStoreOptions{Sessions: sessions}))
	store := newRecordingStore(events)
	s, cmds := newMCPServer(t)
	r := &replica{store: store, cmds: cmds, hs: hs, release: make(chan struct{})}
	s.AddTool(mcp.NewTool("script", mcp.WithNumber("count"), mcp.WithNumber("gapMs"), mcp.WithBoolean("hold")), r.script(s))
	r.http = server.NewStreamableHTTPServer(s, server.WithEventStore(store), server.WithSessionIdManagerResolver(sessions))
	r.srv = httptest.NewServer(events.Resume(r.http))
	t.Cleanup(func() {
		close(r.release)
		r.srv.CloseClientConnections()
		r.srv.Close()
	})
	r.url = r.srv.URL
	return r
}

// script sends count notifications/message ("1", "2", ...), gapMs apart,
// then (with hold) waits for the replica's release, and returns "done".
func (r *replica) script(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		gap := time.Duration(req.GetInt("gapMs", 0)) * time.Millisecond
		for i := 1; i <= req.GetInt("count", 0); i++ {
			if i > 1 {
				time.Sleep(gap)
			}
			_ = s.SendNotificationToClient(ctx, "notifications/message", map[string]any{"data": strconv.Itoa(i)})
		}
		if req.GetBool("hold", false) {
			<-r.release
		}
		return mcp.NewToolResultText("done"), nil
	}
}

// kill stops the replica as a crash would: no request reaches it, no
// response leaves it, and nothing more of it reaches the cluster. Its
// tools run on, unheard.
func (r *replica) kill() {
	_ = r.srv.Config.Close()
	_ = r.hs.Close()
}

// heard records the notifications/message data a client hears.
type heard struct{ *testkit.Heard }

func newHeard() *heard { return &heard{testkit.NewHeard()} }

func (h *heard) on(n mcp.JSONRPCNotification) {
	if d, ok := n.Params.AdditionalFields["data"].(string); ok {
		h.Add(d)
	}
}

// legacy starts an mcp-go client on url with protocol 2025-11-25: sessions
// and resumable streams end with it (SEP-2567, SEP-2575).
func legacy(t *testing.T, ctx context.Context, url string, h *heard) *client.Client {
	t.Helper()
	c := testkit.Must[*client.Client](t)(client.NewStreamableHttpClient(url + "/mcp"))
	if h != nil {
		c.OnNotification(h.on)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "replicas", Version: "0.1.0"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func text(t *testing.T, r *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return r.Content[0].(mcp.TextContent).Text
}

func quiet(t *testing.T, ctx context.Context, mc *client.Client) string {
	t.Helper()
	r, err := mc.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "quiet"}})
	return text(t, r, err)
}

func TestASessionIsServedByEveryReplica(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})

	t.Run("round robin: minted on one, used on both, terminated on all", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		a, b := newReplica(t, c, "mcpgo-replicas-1"), newReplica(t, c, "mcpgo-replicas-1")
		front := testkit.NewFront(t, a.url, b.url)
		front.RoundRobin()
		mc := legacy(t, ctx, front.URL, nil)
		for range 4 {
			if got := quiet(t, ctx, mc); got != "quiet-done" {
				t.Fatalf("quiet: %q", got)
			}
		}
		served := map[int]int{}
		for _, h := range front.Hits() {
			if h.Status >= 300 {
				t.Fatalf("a request failed on replica %d: %+v", h.Replica, h)
			}
			served[h.Replica]++
		}
		if served[0] < 3 || served[1] < 3 {
			t.Fatalf("requests per replica %v", served)
		}
		session := mc.GetSessionId()
		if err := mc.Close(); err != nil {
			t.Fatal(err)
		}
		// The DELETE reached one replica: the session is gone on both.
		for _, r := range []*replica{a, b} {
			req := testkit.Must[*http.Request](t)(http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/mcp",
				strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"quiet","arguments":{}}}`)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(sessionHeader, session)
			req.Header.Set("Mcp-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
			resp := testkit.Must[*http.Response](t)(http.DefaultClient.Do(req))
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("a terminated session on %s: %d", r.url, resp.StatusCode)
			}
		}
	})

	t.Run("a stream cut on A resumes on B: every event after the cut, in order, once", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		a, b := newReplica(t, c, "mcpgo-replicas-2"), newReplica(t, c, "mcpgo-replicas-2")
		front := testkit.NewFront(t, a.url, b.url)
		h := newHeard()
		mc := legacy(t, ctx, front.URL, h)
		type called struct {
			r   *mcp.CallToolResult
			err error
		}
		done := make(chan called, 1)
		go func() {
			r, err := mc.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "emitter"}})
			done <- called{r, err}
		}()
		for _, m := range []string{"1", "2", "3"} {
			a.cmds <- m
		}
		h.Wait(t, 3)
		// The front ends the stream (as a server that ends it, which is
		// what mcp-go's client resumes) and sends what comes next to B.
		front.Point(1)
		front.Cut()
		for _, m := range []string{"4", "5", "6", "7", "return"} {
			a.cmds <- m
		}
		res := <-done
		if got := text(t, res.r, res.err); got != "done" {
			t.Fatalf("result %q", got)
		}
		if got := h.Got(); !slices.Equal(got, []string{"1", "2", "3", "4", "5", "6", "7"}) {
			t.Fatalf("heard %v: a gap or a duplicate", got)
		}
		var resumes []string
		for _, hit := range front.Hits() {
			if hit.LastEventID != "" {
				resumes = append(resumes, fmt.Sprintf("%d %d", hit.Replica, hit.Status))
			}
		}
		if len(resumes) == 0 || slices.ContainsFunc(resumes, func(r string) bool { return r != "1 200" }) {
			t.Fatalf("resumptions %v, want all on B (1) and served", resumes)
		}

		// Either replica replays exactly the events after a given one, with
		// their ids.
		calls := a.store.snapshot()
		var stream []storeCall
		for _, sc := range calls {
			if sc.streamID == calls[len(calls)-1].streamID {
				stream = append(stream, sc)
			}
		}
		if len(stream) != 8 {
			t.Fatalf("%d events stored for the request, want 8", len(stream))
		}
		for _, r := range []*replica{b, a} {
			resp, _ := openGET(t, r.url+"/mcp", mc.GetSessionId(), stream[1].eventID)
			br := bufio.NewReader(resp.Body)
			for _, want := range stream[2:] {
				ev := requireEvent(t, br)
				if ev.id != want.eventID || string(ev.data) != string(want.message) {
					t.Fatalf("replayed %q %s, want %q %s", ev.id, ev.data, want.eventID, want.message)
				}
			}
			requireEOF(t, br)
		}
	})

	t.Run("a replica that shuts down ends none of its sessions", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		a, b := newReplica(t, c, "mcpgo-replicas-3"), newReplica(t, c, "mcpgo-replicas-3")
		front := testkit.NewFront(t, a.url, b.url)
		mc := legacy(t, ctx, front.URL, nil)
		sid := mc.GetSessionId()
		id := testkit.Must[string](t)(a.store.StoreEvent(ctx, sid, "s", []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"x"}}`)))
		testkit.Must[string](t)(a.store.StoreEvent(ctx, sid, "s", []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"y"}}`)))
		// A's shutdown closes the session A registered at initialize: it
		// terminates it with the manager resolved without a request, and
		// purges its events.
		a.http.CloseSessions(ctx)
		front.Point(1)
		if got := quiet(t, ctx, mc); got != "quiet-done" {
			t.Fatalf("quiet on B: %q", got)
		}
		var replayed []string
		if _, err := b.store.ReplayEventsAfter(ctx, sid, id, func(id string, _ json.RawMessage) error {
			replayed = append(replayed, id)
			return nil
		}); err != nil || len(replayed) != 1 {
			t.Fatalf("the session's events after A's shutdown: %v, %v", replayed, err)
		}
		// A DELETE, on any replica, ends it everywhere, and its events go.
		if err := mc.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.store.ReplayEventsAfter(ctx, sid, id, func(string, json.RawMessage) error { return nil }); !errors.Is(err, server.ErrUnknownEventID) {
			t.Fatalf("after the DELETE: %v", err)
		}
	})
}
