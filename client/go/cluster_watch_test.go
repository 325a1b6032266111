package handlestore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// changes reads until want changes arrived (or the time is up).
func changes(t *testing.T, w *handlestore.Watch, want int, within time.Duration) []handlestore.Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var out []handlestore.Change
	for len(out) < want {
		b, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("after %d of %d changes: %v", len(out), want, err)
		}
		out = append(out, b.Changes...)
	}
	return out
}

func TestWatchOnACluster(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	n := 0
	client := func() *handlestore.Client {
		n++
		return cluster.Client(handlestore.Config{Namespace: fmt.Sprintf("go-watch-%d", n)})
	}

	t.Run("a prefix watch sees puts, deletes and expiry in order", func(t *testing.T) {
		ctx, c := testkit.Ctx(t), client()
		tool := c.StateTool(handlestore.StateToolOptions{})
		w := got(c.Watch(ctx, handlestore.WatchPrefix("jobs/"), handlestore.WatchOptions{}))(t)
		defer w.Close()
		r1 := got(tool.Store(ctx, "jobs/1", map[string]string{"state": "queued"}))(t)
		got(tool.Store(ctx, "other/1", "not watched"))(t)
		r2 := got(tool.Store(ctx, "jobs/1", map[string]string{"state": "done"}))(t)
		r3 := got(tool.Delete(ctx, "jobs/1"))(t).Revision
		got(tool.Store(ctx, "jobs/2", "short", handlestore.TTL(500*time.Millisecond)))(t)
		seen := changes(t, w, 5, 10*time.Second)
		want := []string{fmt.Sprint("put jobs/1 ", r1), fmt.Sprint("put jobs/1 ", r2), fmt.Sprint("delete jobs/1 ", r3), "put jobs/2", "expire jobs/2"}
		for i, ch := range seen {
			line := fmt.Sprintf("%s %s %d", ch.Kind, ch.Key, ch.Revision)
			if i >= 3 {
				line = fmt.Sprintf("%s %s", ch.Kind, ch.Key)
			}
			if line != want[i] {
				t.Fatalf("change %d: %s, want %s", i, line, want[i])
			}
		}
		var v map[string]string
		if err := seen[1].Value.Decode(&v); err != nil || v["state"] != "done" {
			t.Fatalf("value %v %v", v, err)
		}
	})

	t.Run("a watch from a revision replays the history, through the iterator", func(t *testing.T) {
		ctx, c := testkit.Ctx(t), client()
		tool := c.StateTool(handlestore.StateToolOptions{})
		first := got(tool.Store(ctx, "h/a", 1))(t)
		got(tool.Store(ctx, "h/b", 2))(t)
		w := got(c.Watch(ctx, handlestore.WatchPrefix("h/"), handlestore.WatchOptions{StartRevision: first}))(t)
		var keys []string
		for b, err := range w.All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range b.Changes {
				keys = append(keys, ch.Key)
			}
			if len(keys) >= 2 {
				break
			}
		}
		if !slices.Equal(keys, []string{"h/a", "h/b"}) {
			t.Fatalf("keys %v", keys)
		}
		if _, err := w.Next(ctx); !errors.Is(err, handlestore.ErrClosed) {
			t.Fatalf("leaving the loop closes the watch: %v", err)
		}
	})

	t.Run("a handle watch names the store; Close ends a waiting Next", func(t *testing.T) {
		ctx, c := testkit.Ctx(t), client()
		carts := handleStore[cart](t, c, "cart", handlestore.HandleStoreOptions{Prefix: "cart"})
		w := got(c.Watch(ctx, handlestore.WatchStore("cart"), handlestore.WatchOptions{KeysOnly: true}))(t)
		id := got(carts.Mint(ctx, cart{}, 0))(t)
		ch := changes(t, w, 1, 10*time.Second)[0]
		if ch.Store != "cart" || ch.Key != id || !ch.Value.IsZero() {
			t.Fatalf("%+v", ch)
		}
		time.AfterFunc(100*time.Millisecond, func() { _ = w.Close() })
		start := time.Now()
		if _, err := w.Next(ctx); !errors.Is(err, handlestore.ErrClosed) || time.Since(start) > 3*time.Second {
			t.Fatalf("%v after %v", err, time.Since(start))
		}
	})

	t.Run("a watch resumes on another node after its node is killed, with no gap and no duplicate", func(t *testing.T) {
		watchThroughAKill(t, cluster, client())
	})
}

func watchThroughAKill(t *testing.T, cluster *testkit.Cluster, c *handlestore.Client) {
	ctx := testkit.Ctx(t)
	tool := c.StateTool(handlestore.StateToolOptions{})
	w := got(c.Watch(ctx, handlestore.WatchPrefix("n/"), handlestore.WatchOptions{}))(t)
	defer w.Close()
	serving := w.Node()
	got(tool.Store(ctx, "n/0", 0))(t)
	changes(t, w, 1, 10*time.Second)
	for _, node := range cluster.Nodes {
		if node.Addr == serving {
			cluster.Kill(node.ID)
		}
	}
	for i := 1; i < 20; i++ {
		got(tool.Store(ctx, fmt.Sprintf("n/%d", i), i))(t)
	}
	seen := changes(t, w, 19, 30*time.Second)
	if len(seen) != 19 {
		t.Fatalf("%d changes, want 19", len(seen))
	}
	var last uint64
	for i, ch := range seen {
		var v int
		if err := ch.Value.Decode(&v); err != nil || v != i+1 || ch.Revision <= last {
			t.Fatalf("change %d: value %d (%v), revision %d after %d", i, v, err, ch.Revision, last)
		}
		last = ch.Revision
	}
	if w.Node() == serving {
		t.Fatal("still served by the killed node")
	}
}
