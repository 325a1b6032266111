package mcpevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

func note(n int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"n","params":{"n":%d}}`, n)
}

func answer(id string) []byte { return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{}}`, id) }

func ids(raw ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(raw))
	for i, r := range raw {
		out[i] = json.RawMessage(r)
	}
	return out
}

// run runs f's resumption on a goroutine, collecting what it sends.
type run struct {
	mu   sync.Mutex
	got  []string
	done chan error
}

func (r *run) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func follow(ctx context.Context, f *Follower) *run {
	r := &run{done: make(chan error, 1)}
	go func() {
		r.done <- f.Run(ctx, func(e Event) error {
			r.mu.Lock()
			r.got = append(r.got, string(e.Data))
			r.mu.Unlock()
			return nil
		}, nil)
	}()
	return r
}

func (r *run) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(LiveTTL + LiveRefresh + 15*time.Second):
		t.Fatalf("the follower hangs, having sent %v", r.sent())
		return nil
	}
}

func strs(bs ...[]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func TestTheOriginAndItsFollowers(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})
	ctx := testkit.Ctx(t)
	client := func(ns string) *handlestore.Client { return c.Client(handlestore.Config{Namespace: ns}) }
	live := func(t *testing.T, l *Log, token string) *handlestore.StateEntry {
		t.Helper()
		return testkit.Must[*handlestore.StateEntry](t)(l.state.Retrieve(ctx, l.LiveKey(token)))
	}

	t.Run("the liveness record lives from the first event to the completing one", func(t *testing.T) {
		l := New(client("live-1"), Options{})
		head := testkit.Must[Head](t)(l.Append(ctx, "S", "s", note(1), &Live{Requests: ids(`1`, `"b"`)}))
		rec := live(t, l, head.Token)
		if rec == nil || string(rec.Value.JSON()) != `{"requests":[1,"b"]}` || !l.IsOrigin("S", "s") {
			t.Fatalf("after the first event: %+v", rec)
		}
		requests := func() string {
			e := testkit.Must[*handlestore.StateEntry](t)(l.state.Retrieve(ctx, l.RequestsKey(head.Token)))
			if e == nil {
				return ""
			}
			return string(e.Value.JSON())
		}
		if got := requests(); got != `{"requests":[1,"b"]}` {
			t.Fatalf("the requests after the first event: %s", got)
		}
		time.Sleep(LiveRefresh + time.Second)
		if again := live(t, l, head.Token); again == nil || !again.ExpiresAt.After(rec.ExpiresAt) {
			t.Fatalf("not refreshed: %v, then %+v", rec.ExpiresAt, again)
		}
		testkit.Must[Head](t)(l.Append(ctx, "S", "s", answer(`"b"`), nil))
		if live(t, l, head.Token) == nil {
			t.Fatal("gone with one of two requests answered")
		}
		testkit.Must[Head](t)(l.Append(ctx, "S", "s", answer(`1`), nil))
		time.Sleep(10 * time.Millisecond)
		if rec := live(t, l, head.Token); rec != nil || l.IsOrigin("S", "s") {
			t.Fatalf("after the response: %+v", rec)
		}
		if got := requests(); got != `{"requests":[1,"b"]}` {
			t.Fatalf("the requests after the response: %s", got)
		}
		// A call answered with its first event writes no record at all.
		quick := testkit.Must[Head](t)(l.Append(ctx, "S", "quick", answer(`1`), &Live{Requests: ids(`1`)}))
		if live(t, l, quick.Token) != nil || l.IsOrigin("S", "quick") || testkit.Must[*handlestore.StateEntry](t)(l.state.Retrieve(ctx, l.RequestsKey(quick.Token))) != nil {
			t.Fatal("a record for a stream complete with its first event")
		}
	})

	t.Run("a released stream's record is deleted and not refreshed", func(t *testing.T) {
		l := New(client("live-2"), Options{})
		head := testkit.Must[Head](t)(l.Append(ctx, "", "s", note(1), &Live{Requests: ids(`1`)}))
		testkit.NoErr(t, l.Release(ctx, "", "s"))
		time.Sleep(LiveRefresh + time.Second)
		if rec := live(t, l, head.Token); rec != nil {
			t.Fatalf("after Release: %+v", rec)
		}
	})

	t.Run("a record that went is not brought back", func(t *testing.T) {
		l := New(client("live-3"), Options{})
		head := testkit.Must[Head](t)(l.Append(ctx, "S", "s", note(1), &Live{Requests: ids(`1`)}))
		// As if it expired: the origin was too slow to rewrite it.
		testkit.Must[handlestore.Deleted](t)(l.state.Delete(ctx, l.LiveKey(head.Token), nil))
		time.Sleep(LiveRefresh + time.Second)
		if rec := live(t, l, head.Token); rec != nil || l.IsOrigin("S", "s") {
			t.Fatalf("brought back: %+v", rec)
		}
	})

	t.Run("a follower that starts after the record went still answers for the origin", func(t *testing.T) {
		origin := New(client("follow-4"), Options{})
		head := testkit.Must[Head](t)(origin.Append(ctx, "", "s", note(1), &Live{Requests: ids(`"r"`)}))
		testkit.NoErr(t, origin.Release(ctx, "", "s"))
		f := testkit.Must[*Follower](t)(New(client("follow-4"), Options{}).Follow(ctx, "", "s", head.Token, 1))
		if !f.CanAnswer() {
			t.Fatal("the requests are lost with the record")
		}
		r := follow(ctx, f)
		testkit.NoErr(t, r.wait(t))
		if got, want := r.sent(), strs(OriginLost(json.RawMessage(`"r"`))); !slices.Equal(got, want) {
			t.Fatalf("sent %v, want %v", got, want)
		}
	})

	t.Run("a follower sends what the origin stores, as it stores it, to the response", func(t *testing.T) {
		origin, other := New(client("follow-1"), Options{}), New(client("follow-1"), Options{})
		head := testkit.Must[Head](t)(origin.Append(ctx, "S", "s", note(1), &Live{Requests: ids(`5`)}))
		testkit.Must[Head](t)(origin.Append(ctx, "S", "s", note(2), nil))
		f := testkit.Must[*Follower](t)(other.Follow(ctx, "S", "s", head.Token, 1))
		if !f.CanAnswer() || len(f.Replay()) != 1 {
			t.Fatalf("replay %d, can answer %v", len(f.Replay()), f.CanAnswer())
		}
		r := follow(ctx, f)
		for _, m := range [][]byte{note(3), note(4), answer(`5`)} {
			time.Sleep(300 * time.Millisecond)
			testkit.Must[Head](t)(origin.Append(ctx, "S", "s", m, nil))
		}
		testkit.NoErr(t, r.wait(t))
		if got, want := r.sent(), strs(note(2), note(3), note(4), answer(`5`)); !slices.Equal(got, want) {
			t.Fatalf("sent %v, want %v", got, want)
		}
		if f.Complete() || !testkit.Must[*Follower](t)(other.Follow(ctx, "S", "s", head.Token, 4)).Complete() {
			t.Fatal("Complete does not say whether the stored events complete the stream")
		}
	})

	t.Run("two followers of a dead origin append one origin_lost between them", func(t *testing.T) {
		dying := client("follow-2")
		origin := New(dying, Options{})
		head := testkit.Must[Head](t)(origin.Append(ctx, "S", "s", note(1), &Live{Requests: ids(`7`, `"x"`)}))
		testkit.Must[Head](t)(origin.Append(ctx, "S", "s", answer(`"x"`), nil))
		var runs []*run
		for range 2 {
			f := testkit.Must[*Follower](t)(New(client("follow-2"), Options{}).Follow(ctx, "S", "s", head.Token, 0))
			runs = append(runs, follow(ctx, f))
		}
		// The origin dies: it writes nothing more, its record expires.
		testkit.NoErr(t, dying.Close())
		want := strs(note(1), answer(`"x"`), OriginLost(json.RawMessage(`7`)))
		for _, r := range runs {
			testkit.NoErr(t, r.wait(t))
			if got := r.sent(); !slices.Equal(got, want) {
				t.Fatalf("sent %v, want %v", got, want)
			}
		}
		stored := testkit.Must[[]Event](t)(New(client("follow-2"), Options{}).After(ctx, head.Token, 0))
		if len(stored) != 3 {
			t.Fatalf("%d events stored, want 3: one origin_lost", len(stored))
		}
	})

	t.Run("a released stream without known requests ends with ErrNoAnswer", func(t *testing.T) {
		origin := New(client("follow-3"), Options{})
		head := testkit.Must[Head](t)(origin.Append(ctx, "S", "s", note(1), &Live{}))
		f := testkit.Must[*Follower](t)(New(client("follow-3"), Options{}).Follow(ctx, "S", "s", head.Token, 0))
		if f.CanAnswer() {
			t.Fatal("it claims to know the requests")
		}
		r := follow(ctx, f)
		testkit.NoErr(t, origin.Release(ctx, "S", "s"))
		if err := r.wait(t); !errors.Is(err, ErrNoAnswer) {
			t.Fatalf("ended with %v", err)
		}
		if got := r.sent(); !slices.Equal(got, strs(note(1))) {
			t.Fatalf("sent %v", got)
		}
	})
}
