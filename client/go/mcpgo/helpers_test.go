package mcpgo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// TestMain says once, in any output mode, why the cluster tests skip (and
// runs the helper process of the token store's test).
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperProcess())
	}
	testkit.Main(m, "the mcp-go seams' cluster tests")
}

// The helpers below are those of mcp-go's own resumability tests
// (e2e/resumability_http_test.go, v1.2.1), written without testify.

const sessionHeader = "Mcp-Session-Id"

const waitTimeout = 30 * time.Second

type storeCall struct {
	sessionID string
	streamID  string
	message   json.RawMessage
	eventID   string
}

// recordingStore wraps a store and tracks every recorded event, so tests
// can wait for messages produced while no client is connected.
type recordingStore struct {
	inner  server.EventStore
	mu     sync.Mutex
	calls  []storeCall
	stored chan struct{}
}

func newRecordingStore(inner server.EventStore) *recordingStore {
	return &recordingStore{inner: inner, stored: make(chan struct{}, 4096)}
}

func (r *recordingStore) StoreEvent(ctx context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	id, err := r.inner.StoreEvent(ctx, sessionID, streamID, message)
	msg := append(json.RawMessage(nil), message...)
	r.mu.Lock()
	r.calls = append(r.calls, storeCall{sessionID: sessionID, streamID: streamID, message: msg, eventID: id})
	r.mu.Unlock()
	r.stored <- struct{}{}
	return id, err
}

func (r *recordingStore) ReplayEventsAfter(ctx context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	return r.inner.ReplayEventsAfter(ctx, sessionID, lastEventID, send)
}

func (r *recordingStore) PurgeSession(ctx context.Context, sessionID string) error {
	return r.inner.PurgeSession(ctx, sessionID)
}

func (r *recordingStore) waitTotalStored(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		r.mu.Lock()
		count := len(r.calls)
		r.mu.Unlock()
		if count >= n {
			return
		}
		select {
		case <-r.stored:
		case <-deadline:
			t.Fatalf("timed out waiting for %d events to be recorded, have %d", n, count)
		}
	}
}

func (r *recordingStore) snapshot() []storeCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]storeCall(nil), r.calls...)
}

type sseEvent struct {
	id   string
	data json.RawMessage
}

// readSSEEvent reads the next SSE event; io.EOF once the stream ends.
func readSSEEvent(br *bufio.Reader) (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return sseEvent{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if seen {
				return ev, nil
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id, seen = value, true
		case "data":
			ev.data, seen = json.RawMessage(value), true
		case "event":
			seen = true
		}
	}
}

func readWithin(br *bufio.Reader) (sseEvent, error) {
	type result struct {
		ev  sseEvent
		err error
	}
	ch := make(chan result, 1)
	go func() {
		ev, err := readSSEEvent(br)
		ch <- result{ev, err}
	}()
	select {
	case r := <-ch:
		return r.ev, r.err
	case <-time.After(waitTimeout):
		return sseEvent{}, errors.New("timed out waiting for an SSE event")
	}
}

func requireEvent(t *testing.T, br *bufio.Reader) sseEvent {
	t.Helper()
	ev, err := readWithin(br)
	if err != nil {
		t.Fatalf("reading an SSE event: %v", err)
	}
	return ev
}

func requireEOF(t *testing.T, br *bufio.Reader) {
	t.Helper()
	ev, err := readWithin(br)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("expected the end of the stream, got event %q / error %v", ev.data, err)
	}
}

func notificationData(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var n struct {
		Method string `json:"method"`
		Params struct {
			Data string `json:"data"`
		} `json:"params"`
	}
	if err := json.Unmarshal(raw, &n); err != nil || n.Method != "notifications/message" {
		t.Fatalf("not a notifications/message: %s (%v)", raw, err)
	}
	return n.Params.Data
}

func toolResponse(t *testing.T, raw json.RawMessage) (int, string) {
	t.Helper()
	var rpc struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &rpc); err != nil || len(rpc.Result.Content) == 0 {
		t.Fatalf("not a tool result: %s (%v)", raw, err)
	}
	return rpc.ID, rpc.Result.Content[0].Text
}

// newMCPServer is mcp-go's test server: "emitter" sends a
// notifications/message per command received until "return", "quiet"
// returns at once.
func newMCPServer(t *testing.T) (*server.MCPServer, chan string) {
	t.Helper()
	s := server.NewMCPServer("resumability-test-server", "1.0.0")
	cmds := make(chan string, 32)
	closeCmds := sync.OnceFunc(func() { close(cmds) })
	s.AddTool(mcp.NewTool("emitter"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for cmd := range cmds {
			if cmd == "return" {
				break
			}
			if err := s.SendNotificationToClient(ctx, "notifications/message", map[string]any{"data": cmd}); err != nil {
				return nil, fmt.Errorf("send notification: %w", err)
			}
		}
		return mcp.NewToolResultText("done"), nil
	})
	s.AddTool(mcp.NewTool("quiet"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("quiet-done"), nil
	})
	t.Cleanup(closeCmds)
	return s, cmds
}

func initSession(t *testing.T, url string) string {
	t.Helper()
	initBody := fmt.Sprintf(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"clientInfo":{"name":"resume-test","version":"1.0.0"},"capabilities":{}}}`,
		mcp.LATEST_PROTOCOL_VERSION,
	)
	resp := testkit.Must[*http.Response](t)(http.Post(url, "application/json", strings.NewReader(initBody)))
	defer resp.Body.Close()
	sessionID := resp.Header.Get(sessionHeader)
	if resp.StatusCode != http.StatusOK || sessionID == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sessionID)
	}
	req := testkit.Must[*http.Request](t)(http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(sessionHeader, sessionID)
	resp2 := testkit.Must[*http.Response](t)(http.DefaultClient.Do(req))
	defer resp2.Body.Close()
	if resp2.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp2.StatusCode)
	}
	return sessionID
}

// openGET opens a listening (or, with lastEventID, resuming) GET stream.
func openGET(t *testing.T, url, sessionID, lastEventID string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req := testkit.Must[*http.Request](t)(http.NewRequestWithContext(ctx, http.MethodGet, url, nil))
	req.Header.Set(sessionHeader, sessionID)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp := testkit.Must[*http.Response](t)(http.DefaultClient.Do(req))
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp, cancel
}

type postResult struct {
	resp *http.Response
	err  error
}

// startToolCall POSTs a tools/call of the emitter; the channel yields the
// response once its headers arrive.
func startToolCall(t *testing.T, url, sessionID string, requestID int) (<-chan postResult, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"emitter","arguments":{}}}`, requestID)
	req := testkit.Must[*http.Request](t)(http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(sessionHeader, sessionID)
	ch := make(chan postResult, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		ch <- postResult{resp: resp, err: err}
	}()
	return ch, cancel
}

func waitResponse(t *testing.T, ch <-chan postResult) *http.Response {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("tools/call: %v", r.err)
		}
		t.Cleanup(func() { _ = r.resp.Body.Close() })
		return r.resp
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for HTTP response headers")
		return nil
	}
}

func sendNotification(t *testing.T, s *server.MCPServer, sessionID, data string) {
	t.Helper()
	if err := s.SendNotificationToSpecificClient(sessionID, "notifications/message", map[string]any{"data": data}); err != nil {
		t.Fatal(err)
	}
}
