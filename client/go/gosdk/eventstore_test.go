package gosdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/gosdk"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// TestMain says once, in any output mode, why the cluster tests skip.
func TestMain(m *testing.M) { testkit.Main(m, "the go-sdk seams' cluster tests") }

// collect is what After yields: the data, or the first error.
func collect(s mcp.EventStore, ctx context.Context, session, stream string, index int) ([]string, error) {
	var got []string
	for d, err := range s.After(ctx, session, stream, index) {
		if err != nil {
			return got, err
		}
		got = append(got, string(d))
	}
	return got, nil
}

// afterCase is a case of the SDK's TestMemoryEventStoreAfter (mcp/event_test.go,
// go-sdk v1.8.0), with its events but without its byte limit (the cluster
// store keeps events by count and TTL; purging has cases of its own).
type afterCase struct {
	session, stream string
	index           int
	want            []string
	wantErr         string // the error contains it
}

func afterCases(clusterStore bool) []afterCase {
	unknownSession := "unknown session ID"
	if clusterStore {
		// The cluster keeps no record of a session apart from its streams.
		unknownSession = "unknown stream ID"
	}
	return []afterCase{
		{"S1", "1", -1, []string{"d1", "d2", "d3"}, ""},
		{"S1", "1", 0, []string{"d2", "d3"}, ""},
		{"S1", "1", 1, []string{"d3"}, ""},
		{"S1", "1", 2, nil, ""},
		{"S1", "1", 3, nil, ""},
		{"S1", "1", 100, nil, ""}, // past the end of stream "1" (highest is 2)
		{"S1", "2", 0, nil, ""},
		{"S1", "2", 1, nil, ""},
		{"S1", "2", 100, nil, ""},
		{"S1", "3", 0, nil, "unknown stream ID"},
		{"S2", "0", 0, nil, unknownSession},
	}
}

// storeCases runs the SDK's cases, and the rest of what the transport
// relies on, against a store.
func storeCases(t *testing.T, name string, clusterStore bool, make func(t *testing.T) mcp.EventStore) {
	t.Run(name+": after", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		s := make(t)
		for _, e := range []struct{ stream, data string }{{"1", "d1"}, {"1", "d2"}, {"1", "d3"}, {"2", "d4"}} {
			if err := s.Append(ctx, "S1", e.stream, []byte(e.data)); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range afterCases(clusterStore) {
			got, err := collect(s, ctx, c.session, c.stream, c.index)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("%s-%s-%d: unexpected error %q", c.session, c.stream, c.index, err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("%s-%s-%d: got error %v, want it to contain %q", c.session, c.stream, c.index, err, c.wantErr)
			case c.wantErr == "" && !slices.Equal(got, c.want):
				t.Errorf("%s-%s-%d: got %v, want %v", c.session, c.stream, c.index, got, c.want)
			}
		}
	})

	t.Run(name+": session close", func(t *testing.T) {
		// The SDK's "session close" state case: S1's streams go, S2's stay.
		ctx := testkit.Ctx(t)
		s := make(t)
		for _, e := range []struct{ session, stream, data string }{{"S1", "1", "d1"}, {"S1", "2", "d2"}, {"S1", "1", "d3"}, {"S2", "8", "d4"}} {
			if err := s.Append(ctx, e.session, e.stream, []byte(e.data)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SessionClosed(ctx, "S1"); err != nil {
			t.Fatal(err)
		}
		for _, stream := range []string{"1", "2"} {
			if _, err := collect(s, ctx, "S1", stream, 0); err == nil {
				t.Errorf("stream %s of a closed session still replays", stream)
			}
		}
		if got, err := collect(s, ctx, "S2", "8", -1); err != nil || !slices.Equal(got, []string{"d4"}) {
			t.Errorf("S2 after S1 closed: %v, %v", got, err)
		}
	})

	t.Run(name+": an opened stream with nothing stored replays nothing", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		s := make(t)
		if err := s.Open(ctx, "S1", ""); err != nil {
			t.Fatal(err)
		}
		if got, err := collect(s, ctx, "S1", "", -1); err != nil || len(got) != 0 {
			t.Errorf("got %v, %v", got, err)
		}
	})

	t.Run(name+": indexes count the priming event", func(t *testing.T) {
		// The transport stores a stream's priming event as nil data at index
		// 0 and names the events after it "<stream>_1", "<stream>_2"...
		ctx := testkit.Ctx(t)
		s := make(t)
		for _, d := range [][]byte{nil, []byte(`{"n":1}`), []byte(`{"n":2}`), []byte(`{"n":3}`)} {
			if err := s.Append(ctx, "S1", "x", d); err != nil {
				t.Fatal(err)
			}
		}
		got, err := collect(s, ctx, "S1", "x", 1)
		if err != nil || !slices.Equal(got, []string{`{"n":2}`, `{"n":3}`}) {
			t.Errorf("after index 1: %v, %v", got, err)
		}
		got, err = collect(s, ctx, "S1", "x", -1)
		if err != nil || len(got) != 4 || got[0] != "" {
			t.Errorf("after index -1: %q, %v", got, err)
		}
	})
}

func TestTheSDKsMemoryEventStore(t *testing.T) {
	storeCases(t, "MemoryEventStore", false, func(*testing.T) mcp.EventStore { return mcp.NewMemoryEventStore(nil) })
}

func TestTheEventStoreOnACluster(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})
	n := 0
	store := func(t *testing.T, opts gosdk.EventStoreOptions) *gosdk.EventStore {
		n++
		client := c.Client(handlestore.Config{Namespace: fmt.Sprintf("gosdk-events-%d", n)})
		return testkit.Must[*gosdk.EventStore](t)(gosdk.NewEventStore(client, opts))
	}
	storeCases(t, "EventStore", true, func(t *testing.T) mcp.EventStore { return store(t, gosdk.EventStoreOptions{}) })

	t.Run("another replica's store replays the same events", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		a := store(t, gosdk.EventStoreOptions{})
		n-- // b is in a's namespace
		b := store(t, gosdk.EventStoreOptions{})
		for i := range 5 {
			if err := a.Append(ctx, "S", "x", fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := collect(b, ctx, "S", "x", 2)
		if err != nil || !slices.Equal(got, []string{`{"n":3}`, `{"n":4}`}) {
			t.Fatalf("b after index 2: %v, %v", got, err)
		}
	})

	t.Run("events pushed out of the window are purged, never skipped", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		s := store(t, gosdk.EventStoreOptions{MaxEvents: 100})
		for i := range 201 {
			if err := s.Append(ctx, "S", "x", fmt.Appendf(nil, "%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		// Bucket 0 (indexes 0-98) went when the 201st event came.
		for _, index := range []int{-1, 0, 97} {
			if got, err := collect(s, ctx, "S", "x", index); !errors.Is(err, mcp.ErrEventsPurged) || len(got) != 0 {
				t.Errorf("after index %d: %d events, %v; want ErrEventsPurged", index, len(got), err)
			}
		}
		got, err := collect(s, ctx, "S", "x", 98)
		if err != nil || len(got) != 102 || got[0] != "99" || got[101] != "200" {
			t.Fatalf("after index 98: %d events, %v", len(got), err)
		}
	})

	t.Run("an unknown stream is ErrUnknownStream", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		s := store(t, gosdk.EventStoreOptions{})
		if _, err := collect(s, ctx, "S", "nope", 3); !errors.Is(err, gosdk.ErrUnknownStream) {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("the empty session is never closed; KeepOnSessionClosed keeps every one", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		s := store(t, gosdk.EventStoreOptions{})
		n--
		keep := store(t, gosdk.EventStoreOptions{KeepOnSessionClosed: true})
		testkit.NoErr(t, s.Append(ctx, "", "x", []byte(`1`)))
		testkit.NoErr(t, s.Append(ctx, "S", "x", []byte(`1`)))
		testkit.NoErr(t, s.SessionClosed(ctx, ""))
		testkit.NoErr(t, keep.SessionClosed(ctx, "S"))
		for _, session := range []string{"", "S"} {
			if got, err := collect(s, ctx, session, "x", -1); err != nil || len(got) != 1 {
				t.Errorf("session %q: %v, %v", session, got, err)
			}
		}
	})
}

func TestBadInputIsRefusedBeforeAnyCall(t *testing.T) {
	// Nothing listens there: a call would end in a deadline error.
	dead := testkit.Must[*handlestore.Client](t)(handlestore.New(handlestore.Config{Endpoints: []string{"127.0.0.1:1"}, CallTimeout: 300 * time.Millisecond}))
	defer dead.Close()
	s := testkit.Must[*gosdk.EventStore](t)(gosdk.NewEventStore(dead, gosdk.EventStoreOptions{}))
	// A context's deadline bounds a call, else the client's CallTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := collect(s, ctx, "S", "x", -2); !errors.Is(err, handlestore.ErrInvalidArgument) {
		t.Errorf("index -2: %v", err)
	}
	if err := s.Open(ctx, "S", "x"); err != nil {
		t.Errorf("Open made a call: %v", err)
	}
	if _, err := collect(s, ctx, "S", "x", 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a real read did not reach the dead node: %v", err)
	}
	if _, err := gosdk.NewEventStore(dead, gosdk.EventStoreOptions{Prefix: "a//b"}); !errors.Is(err, handlestore.ErrInvalidArgument) {
		t.Errorf("a bad prefix: %v", err)
	}
}
