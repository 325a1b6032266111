package mcpgo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
	"github.com/handlestore/handlestore/client/go/mcpgo"
)

// resumabilityCases are the cases of mcp-go's own resumability tests
// (e2e/resumability_http_test.go, v1.2.1), each on a server of the SDK with
// a store from newStore: the SDK's InMemoryEventStore or the cluster's.
// (TestResumability_NoEventStoreNoIDs and _CustomStore test the server
// without a store, or with a fake one: they are not about a store.)
func resumabilityCases(t *testing.T, newStore func(t *testing.T) server.EventStore) {
	start := func(t *testing.T) (*server.MCPServer, string, chan string, *recordingStore) {
		t.Helper()
		s, cmds := newMCPServer(t)
		store := newRecordingStore(newStore(t))
		ts := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithEventStore(store)))
		t.Cleanup(func() {
			ts.CloseClientConnections()
			ts.Close()
		})
		return s, ts.URL, cmds, store
	}

	t.Run("listening stream event ids", func(t *testing.T) {
		s, url, _, _ := start(t)
		sid := initSession(t, url)
		resp, _ := openGET(t, url, sid, "")
		br := bufio.NewReader(resp.Body)
		seen := map[string]bool{}
		for i, want := range []string{"n1", "n2", "n3"} {
			sendNotification(t, s, sid, want)
			ev := requireEvent(t, br)
			if ev.id == "" || seen[ev.id] {
				t.Fatalf("event %d: id %q (seen %v)", i+1, ev.id, seen)
			}
			seen[ev.id] = true
			if got := notificationData(t, ev.data); got != want {
				t.Fatalf("event %d: %q, want %q", i+1, got, want)
			}
		}
	})

	t.Run("listening stream resume", func(t *testing.T) {
		s, url, _, store := start(t)
		sid := initSession(t, url)
		resp1, cancel1 := openGET(t, url, sid, "")
		br1 := bufio.NewReader(resp1.Body)
		sendNotification(t, s, sid, "n1")
		sendNotification(t, s, sid, "n2")
		_ = requireEvent(t, br1)
		ev2 := requireEvent(t, br1)

		// Drop the connection, then produce messages while nobody listens.
		cancel1()
		sendNotification(t, s, sid, "n3")
		sendNotification(t, s, sid, "n4")
		store.waitTotalStored(t, 4)

		// Resume after n2: exactly n3 and n4, then live delivery.
		resp2, cancel2 := openGET(t, url, sid, ev2.id)
		br2 := bufio.NewReader(resp2.Body)
		ev3, ev4 := requireEvent(t, br2), requireEvent(t, br2)
		if notificationData(t, ev3.data) != "n3" || notificationData(t, ev4.data) != "n4" || ev3.id == "" || ev4.id == "" {
			t.Fatalf("replayed %s %s", ev3.data, ev4.data)
		}
		sendNotification(t, s, sid, "n5")
		ev5 := requireEvent(t, br2)
		if notificationData(t, ev5.data) != "n5" {
			t.Fatalf("live %s", ev5.data)
		}

		// Resuming again replays with the ids the events were given.
		cancel2()
		store.waitTotalStored(t, 5)
		resp3, _ := openGET(t, url, sid, ev3.id)
		br3 := bufio.NewReader(resp3.Body)
		again4, again5 := requireEvent(t, br3), requireEvent(t, br3)
		if again4.id != ev4.id || again5.id != ev5.id || notificationData(t, again5.data) != "n5" {
			t.Fatalf("replayed %q %q, want %q %q", again4.id, again5.id, ev4.id, ev5.id)
		}
	})

	t.Run("interrupted request captured", func(t *testing.T) {
		_, url, cmds, store := start(t)
		sid := initSession(t, url)
		respCh, cancelPost := startToolCall(t, url, sid, 42)
		cmds <- "p1"
		br := bufio.NewReader(waitResponse(t, respCh).Body)
		evP1 := requireEvent(t, br)
		if evP1.id == "" || notificationData(t, evP1.data) != "p1" {
			t.Fatalf("first event %q %s", evP1.id, evP1.data)
		}
		// Kill the connection mid-request, then let the handler finish.
		cancelPost()
		cmds <- "p2"
		cmds <- "p3"
		cmds <- "return"
		store.waitTotalStored(t, 4) // p1, p2, p3, response

		resp2, _ := openGET(t, url, sid, evP1.id)
		br2 := bufio.NewReader(resp2.Body)
		if got := notificationData(t, requireEvent(t, br2).data); got != "p2" {
			t.Fatal(got)
		}
		if got := notificationData(t, requireEvent(t, br2).data); got != "p3" {
			t.Fatal(got)
		}
		if id, text := toolResponse(t, requireEvent(t, br2).data); id != 42 || text != "done" {
			t.Fatalf("response %d %q", id, text)
		}
		requireEOF(t, br2)
	})

	t.Run("stream isolation and unique ids", func(t *testing.T) {
		_, url, cmds, store := start(t)
		sid := initSession(t, url)
		respChA, cancelA := startToolCall(t, url, sid, 1)
		cmds <- "a1"
		brA := bufio.NewReader(waitResponse(t, respChA).Body)
		evA1 := requireEvent(t, brA)
		cancelA()
		cmds <- "a2"
		cmds <- "return"
		store.waitTotalStored(t, 3)

		respChB, _ := startToolCall(t, url, sid, 2)
		cmds <- "b1"
		brB := bufio.NewReader(waitResponse(t, respChB).Body)
		evB1 := requireEvent(t, brB)
		cmds <- "return"
		evBR := requireEvent(t, brB)
		if id, _ := toolResponse(t, evBR.data); id != 2 {
			t.Fatalf("response of %d", id)
		}
		store.waitTotalStored(t, 5)

		// Resuming from a1 yields a2 and A's response, nothing of B's.
		resp, _ := openGET(t, url, sid, evA1.id)
		br := bufio.NewReader(resp.Body)
		evA2 := requireEvent(t, br)
		evAR := requireEvent(t, br)
		if notificationData(t, evA2.data) != "a2" {
			t.Fatalf("%s", evA2.data)
		}
		if id, text := toolResponse(t, evAR.data); id != 1 || text != "done" {
			t.Fatalf("response %d %q", id, text)
		}
		requireEOF(t, br)

		// Resuming from b1 yields only B's response, with its id.
		resp2, _ := openGET(t, url, sid, evB1.id)
		br2 := bufio.NewReader(resp2.Body)
		if again := requireEvent(t, br2); again.id != evBR.id {
			t.Fatalf("replayed id %q, want %q", again.id, evBR.id)
		}
		requireEOF(t, br2)

		seen := map[string]bool{}
		for _, id := range []string{evA1.id, evA2.id, evAR.id, evB1.id, evBR.id} {
			if id == "" || seen[id] {
				t.Fatalf("event id %q is not unique within the session", id)
			}
			seen[id] = true
		}
	})

	t.Run("unknown Last-Event-ID", func(t *testing.T) {
		s, url, _, _ := start(t)
		sid := initSession(t, url)
		if resp, _ := openGET(t, url, sid, "no-such-event"); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
		respGET, _ := openGET(t, url, sid, "")
		sendNotification(t, s, sid, "n1")
		_ = requireEvent(t, bufio.NewReader(respGET.Body))
		if resp, _ := openGET(t, url, sid, "still-not-an-id"); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})

	t.Run("terminated session cannot resume", func(t *testing.T) {
		s, url, _, _ := start(t)
		sid := initSession(t, url)
		resp, cancelGET := openGET(t, url, sid, "")
		br := bufio.NewReader(resp.Body)
		sendNotification(t, s, sid, "n1")
		sendNotification(t, s, sid, "n2")
		ev := requireEvent(t, br)
		cancelGET()

		resumed, cancelResumed := openGET(t, url, sid, ev.id)
		if resumed.StatusCode != http.StatusOK || notificationData(t, requireEvent(t, bufio.NewReader(resumed.Body)).data) != "n2" {
			t.Fatalf("resume while the session lives: %d", resumed.StatusCode)
		}
		cancelResumed()

		req := testkit.Must[*http.Request](t)(http.NewRequest(http.MethodDelete, url, nil))
		req.Header.Set(sessionHeader, sid)
		del := testkit.Must[*http.Response](t)(http.DefaultClient.Do(req))
		_ = del.Body.Close()
		if del.StatusCode != http.StatusOK {
			t.Fatalf("DELETE: %d", del.StatusCode)
		}
		if rejected, _ := openGET(t, url, sid, ev.id); rejected.StatusCode != http.StatusBadRequest {
			t.Fatalf("resume after DELETE: %d", rejected.StatusCode)
		}
	})

	t.Run("cross-session rejected", func(t *testing.T) {
		s, url, _, _ := start(t)
		sidA := initSession(t, url)
		respA, _ := openGET(t, url, sidA, "")
		sendNotification(t, s, sidA, "a1")
		evA := requireEvent(t, bufio.NewReader(respA.Body))
		sidB := initSession(t, url)
		respB, _ := openGET(t, url, sidB, "")
		sendNotification(t, s, sidB, "b1")
		_ = requireEvent(t, bufio.NewReader(respB.Body))
		if resp, _ := openGET(t, url, sidB, evA.id); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("another session's event id: %d", resp.StatusCode)
		}
	})

	t.Run("plain JSON not recorded", func(t *testing.T) {
		_, url, _, store := start(t)
		sid := initSession(t, url)
		req := testkit.Must[*http.Request](t)(http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"quiet","arguments":{}}}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(sessionHeader, sid)
		resp := testkit.Must[*http.Response](t)(http.DefaultClient.Do(req))
		defer resp.Body.Close()
		if !strings.Contains(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
		}
		if n := len(store.snapshot()); n != 0 {
			t.Fatalf("%d events recorded for a plain JSON response", n)
		}
	})

	t.Run("reconnect supersedes", func(t *testing.T) {
		s, url, _, _ := start(t)
		sid := initSession(t, url)
		resp1, _ := openGET(t, url, sid, "")
		br1 := bufio.NewReader(resp1.Body)
		sendNotification(t, s, sid, "n1")
		ev1 := requireEvent(t, br1)
		resp2, _ := openGET(t, url, sid, ev1.id)
		br2 := bufio.NewReader(resp2.Body)
		requireEOF(t, br1)
		sendNotification(t, s, sid, "n2")
		if got := notificationData(t, requireEvent(t, br2).data); got != "n2" {
			t.Fatal(got)
		}
	})
}

func TestTheSDKsInMemoryEventStore(t *testing.T) {
	resumabilityCases(t, func(*testing.T) server.EventStore { return server.NewInMemoryEventStore() })
}

func TestTheEventStoreOnACluster(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})
	n := 0
	resumabilityCases(t, func(t *testing.T) server.EventStore {
		n++
		client := c.Client(handlestore.Config{Namespace: fmt.Sprintf("mcpgo-events-%d", n)})
		return testkit.Must[*mcpgo.EventStore](t)(mcpgo.NewEventStore(client, mcpgo.EventStoreOptions{}))
	})

	t.Run("ids are the other stores' and another replica's store replays them", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		a := testkit.Must[*mcpgo.EventStore](t)(mcpgo.NewEventStore(c.Client(handlestore.Config{Namespace: "mcpgo-ids"}), mcpgo.EventStoreOptions{}))
		b := testkit.Must[*mcpgo.EventStore](t)(mcpgo.NewEventStore(c.Client(handlestore.Config{Namespace: "mcpgo-ids"}), mcpgo.EventStoreOptions{}))
		var ids []string
		for i := range 4 {
			id := testkit.Must[string](t)(a.StoreEvent(ctx, "S", "stream-1", []byte(fmt.Sprintf(`{"n":%d}`, i))))
			ids = append(ids, id)
		}
		token := ids[0][:26]
		for i, id := range ids {
			if id != fmt.Sprintf("%s.%d", token, i+1) {
				t.Fatalf("event id %q", id)
			}
		}
		var got []string
		stream, err := b.ReplayEventsAfter(ctx, "S", ids[1], func(id string, m json.RawMessage) error {
			got = append(got, id+" "+string(m))
			return nil
		})
		if err != nil || stream != "stream-1" || strings.Join(got, ",") != ids[2]+` {"n":2},`+ids[3]+` {"n":3}` {
			t.Fatalf("replay %q %v: %v", stream, got, err)
		}
		// The TypeScript store's layout: its replay finds the stream by the
		// token, in the session's scope.
		tool := c.Client(handlestore.Config{Namespace: "mcpgo-ids"}).StateTool(handlestore.StateToolOptions{})
		var name string
		if ok, err := tool.Get(ctx, "mcp/events/tokens/"+token, &name); !ok || err != nil || name != "stream-1" {
			t.Fatalf("tokens/<token>: %q %v %v", name, ok, err)
		}
		// An error from send ends the replay with it.
		boom := errors.New("boom")
		if _, err := b.ReplayEventsAfter(ctx, "S", ids[0], func(string, json.RawMessage) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("send's error: %v", err)
		}
		// An id past the head was never issued.
		if _, err := b.ReplayEventsAfter(ctx, "S", token+".9", func(string, json.RawMessage) error { return nil }); !errors.Is(err, server.ErrUnknownEventID) {
			t.Fatalf("an id never issued: %v", err)
		}
	})
}

func TestAMalformedEventIDMakesNoCall(t *testing.T) {
	dead := testkit.Must[*handlestore.Client](t)(handlestore.New(handlestore.Config{Endpoints: []string{"127.0.0.1:1"}}))
	defer dead.Close()
	s := testkit.Must[*mcpgo.EventStore](t)(mcpgo.NewEventStore(dead, mcpgo.EventStoreOptions{}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	token := "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for _, id := range []string{"", "no-such-event", "1", token, token + ".01", token + ".-1", strings.ToLower(token) + ".1", token + "_1"} {
		if _, err := s.ReplayEventsAfter(ctx, "S", id, nil); !errors.Is(err, server.ErrUnknownEventID) {
			t.Errorf("%q: %v", id, err)
		}
	}
	// A well-formed one makes a call (which fails: nothing listens there).
	if _, err := s.ReplayEventsAfter(ctx, "S", token+".1", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a real read did not reach the dead node: %v", err)
	}
}
