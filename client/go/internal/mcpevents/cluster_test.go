package mcpevents

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// TestMain says once, in any output mode, why the cluster tests skip.
func TestMain(m *testing.M) { testkit.Main(m, "the event log's cluster tests") }

func seqs(evs []Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func contiguous(from uint64, got []uint64) bool {
	for i, s := range got {
		if s != from+uint64(i) {
			return false
		}
	}
	return true
}

func TestTheLogOnACluster(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})
	ctx := testkit.Ctx(t)
	client := func(ns string) *handlestore.Client { return c.Client(handlestore.Config{Namespace: ns}) }

	t.Run("two writers on one stream never share a number", func(t *testing.T) {
		a, b := New(client("log-writers"), Options{}), New(client("log-writers"), Options{})
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Go(func() {
				l := a
				if i%2 == 1 {
					l = b
				}
				if _, err := l.Append(ctx, "S", "s", fmt.Appendf(nil, `{"n":%d}`, i), nil); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		head, ok, err := a.Head(ctx, "S", "s")
		if err != nil || !ok || head.Seq != 40 {
			t.Fatalf("head %+v %v %v", head, ok, err)
		}
		evs, err := b.After(ctx, head.Token, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(evs); len(got) != 40 || !contiguous(1, got) {
			t.Fatalf("sequence numbers %v", got)
		}
		seen := map[string]bool{}
		for _, e := range evs {
			seen[string(e.Data)] = true
		}
		if len(seen) != 40 {
			t.Fatalf("%d distinct events of 40", len(seen))
		}
	})

	t.Run("bytes come back as they went in; priming events are null", func(t *testing.T) {
		l := New(client("log-bytes"), Options{})
		in := []string{"", `{"jsonrpc":"2.0", "method":"spaced"}`, "d1", "null", "\x00\xff"}
		var head Head
		for _, d := range in {
			var err error
			if head, err = l.Append(ctx, "", "s", []byte(d), nil); err != nil {
				t.Fatal(err)
			}
		}
		evs, err := l.After(ctx, head.Token, 0)
		if err != nil || len(evs) != len(in) {
			t.Fatalf("%d events, %v", len(evs), err)
		}
		for i, e := range evs {
			if string(e.Data) != in[i] || (in[i] == "" && e.Data != nil) {
				t.Errorf("event %d: %q, want %q", i+1, e.Data, in[i])
			}
		}
		raw, err := client("log-bytes").StateTool(handlestore.StateToolOptions{}).Retrieve(ctx, l.EventKey(head.Token, 2))
		if err != nil || string(raw.Value.JSON()) != `{"message":{"jsonrpc":"2.0", "method":"spaced"}}` {
			t.Fatalf("stored as %s (%v)", raw.Value.JSON(), err)
		}
		stream, ok, err := l.StreamOf(ctx, head.Token)
		if err != nil || !ok || stream != "s" {
			t.Fatalf("StreamOf: %q %v %v", stream, ok, err)
		}
	})

	t.Run("a failed append leaves its number unused", func(t *testing.T) {
		l := New(client("log-lost"), Options{})
		if _, err := l.Append(ctx, "S", "s", []byte(`1`), nil); err != nil {
			t.Fatal(err)
		}
		huge := []byte(`"` + strings.Repeat("x", 4<<20) + `"`)
		if _, err := l.Append(ctx, "S", "s", huge, nil); !errors.Is(err, handlestore.ErrInvalidArgument) {
			t.Fatalf("a value too large: %v", err)
		}
		head, err := l.Append(ctx, "S", "s", []byte(`3`), nil)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := l.After(ctx, head.Token, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(seqs(evs)); got != "[1 3]" {
			t.Fatalf("sequence numbers %s, want [1 3]", got)
		}
	})

	t.Run("old buckets go; purging a session removes its streams", func(t *testing.T) {
		l := New(client("log-purge"), Options{MaxEvents: 100})
		var head Head
		var err error
		for i := range 201 {
			if head, err = l.Append(ctx, "S", "big", fmt.Appendf(nil, "%d", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		evs, err := l.After(ctx, head.Token, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(evs); len(got) == 0 || got[0] != 100 || !contiguous(100, got) || got[len(got)-1] != 201 {
			t.Fatalf("after 201 events with MaxEvents 100, kept %v", got)
		}
		other, err := l.Append(ctx, "S", "other", []byte(`1`), nil)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := l.Append(ctx, "T", "other", []byte(`1`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.PurgeSession(ctx, "S"); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"big", "other"} {
			if _, ok, err := l.Head(ctx, "S", s); ok || err != nil {
				t.Fatalf("stream %s survived the purge (%v)", s, err)
			}
		}
		for _, token := range []string{head.Token, other.Token} {
			if evs, err := l.After(ctx, token, 0); len(evs) != 0 || err != nil {
				t.Fatalf("%d events survived the purge (%v)", len(evs), err)
			}
			if _, ok, _ := l.StreamOf(ctx, token); ok {
				t.Fatal("a token survived the purge")
			}
		}
		if h, ok, err := l.Head(ctx, "T", "other"); !ok || err != nil || h.Token != kept.Token {
			t.Fatalf("another session's stream went too: %v %v", ok, err)
		}
		// The next append after a purge starts a new stream.
		again, err := l.Append(ctx, "S", "other", []byte(`2`), nil)
		if err != nil || again.Token == other.Token || again.Seq != 1 {
			t.Fatalf("after the purge: %+v, %v", again, err)
		}
	})
}
