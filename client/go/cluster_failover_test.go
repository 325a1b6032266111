package handlestore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	handlestore "github.com/handlestore/handlestore/client/go"
	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

func TestLeaderFollowingAndExactlyOnce(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})

	t.Run("the same write id twice: the first answer again, applied once", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		c := cluster.Client(handlestore.Config{Namespace: "go-once"})
		id, release := c.NewWriteID()
		defer release()
		// Create-only: applied twice, it would conflict.
		req := &pb.StoreRequest{Namespace: c.Namespace(), Key: "once", Value: &pb.StateValue{Kind: &pb.StateValue_Json{Json: "1"}},
			ExpectedRevision: proto.Uint64(0), WriteId: id}
		state := pb.NewStateClient(c.Conn())
		first := got(state.Store(ctx, req))(t)
		if again, err := state.Store(ctx, req); err != nil || again.GetRevision() != first.GetRevision() {
			t.Fatalf("again: %v %v, first %v", again, err, first)
		}
	})

	t.Run("writes sent to a follower move to the leader it names", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		leader := cluster.Node(cluster.WaitLeader(10 * time.Second)).Addr
		var others []string
		for _, e := range cluster.Endpoints() {
			if e != leader {
				others = append(others, e)
			}
		}
		c := cluster.Client(handlestore.Config{Namespace: "go-move", Endpoints: append(others, leader)})
		tool := c.StateTool(handlestore.StateToolOptions{})
		got(tool.Store(ctx, "k", 1))(t)
		got(tool.Store(ctx, "k", 2))(t)
		if c.Preferred() != leader {
			t.Fatalf("preferred %s, leader %s", c.Preferred(), leader)
		}
	})

	t.Run("an unreachable endpoint is skipped", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		c := cluster.Client(handlestore.Config{Namespace: "go-skip", Endpoints: append([]string{"127.0.0.1:1"}, cluster.Endpoints()...)})
		var v string
		got(c.StateTool(handlestore.StateToolOptions{}).Store(ctx, "k", "v"))(t)
		if ok, err := c.StateTool(handlestore.StateToolOptions{}).Get(ctx, "k", &v); !ok || err != nil || v != "v" {
			t.Fatalf("%q %v %v", v, ok, err)
		}
	})

	t.Run("writes through a leader SIGKILL apply exactly once, and a new leader takes over", func(t *testing.T) {
		writesThroughAKill(t, cluster)
	})
}

// writesThroughAKill writes create-only stores, deletes and mints while the
// leader is SIGKILLed: a second application of any would fail or count
// wrong.
func writesThroughAKill(t *testing.T, cluster *testkit.Cluster) {
	ctx := testkit.Ctx(t)
	c := cluster.Client(handlestore.Config{Namespace: "go-failover", CallTimeout: 30 * time.Second, AttemptTimeout: time.Second})
	tool := c.StateTool(handlestore.StateToolOptions{})
	jobs := handleStore[int](t, c, "jobs", handlestore.HandleStoreOptions{})
	key := func(p string, i int) string { return fmt.Sprintf("%s/%03d", p, i) }
	var old []handlestore.StoreItem
	for i := range 60 {
		old = append(old, handlestore.StoreItem{Key: key("old", i), Value: i})
	}
	got(tool.BatchStore(ctx, old))(t)
	leader := cluster.WaitLeader(10 * time.Second)
	var done atomic.Int64
	killed := make(chan int64)
	go func() {
		for done.Load() < 20 {
			time.Sleep(time.Millisecond)
		}
		cluster.Kill(leader)
		killed <- done.Load()
	}()
	minted := make([]string, 60)
	for i := range 60 {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := tool.Store(ctx, key("new", i), i, handlestore.IfRevision(0)); err != nil {
				t.Errorf("store %d: %v", i, err)
			}
		}()
		go func() {
			defer wg.Done()
			if d, err := tool.Delete(ctx, key("old", i)); err != nil || d.Count != 1 {
				t.Errorf("delete %d: %+v %v", i, d, err)
			}
		}()
		wg.Wait()
		id := handlestore.NewHandleID("job")
		if _, err := jobs.MintWithID(ctx, id, i, 0); err != nil {
			t.Fatalf("mint %d: %v", i, err)
		}
		minted[i] = id
		done.Add(1)
	}
	if at := <-killed; at >= 30 {
		t.Fatalf("the leader died with %d of 60 writes acknowledged", at)
	}
	checkExactlyOnce(t, ctx, tool, jobs, minted)
	now := cluster.WaitLeader(30 * time.Second)
	if now == leader {
		t.Fatal("no new leader")
	}
	got(tool.Store(ctx, "after", 1))(t)
	if c.Preferred() != cluster.Node(now).Addr {
		t.Fatalf("the client prefers %s, the leader is %s", c.Preferred(), cluster.Node(now).Addr)
	}
}

func checkExactlyOnce(t *testing.T, ctx context.Context, tool *handlestore.StateTool, jobs *handlestore.HandleStore[int], minted []string) {
	var fresh []string
	for e, err := range tool.Scan(ctx, "new/", handlestore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, e.Key)
	}
	if len(fresh) != 60 || fresh[0] != "new/000" || fresh[59] != "new/059" {
		t.Fatalf("%d new keys: %v", len(fresh), fresh)
	}
	if page := got(tool.List(ctx, "old/", handlestore.ListOptions{}))(t); len(page.Entries) != 0 {
		t.Fatalf("%d old keys left", len(page.Entries))
	}
	if n := got(jobs.Len(ctx))(t); n != 60 {
		t.Fatalf("%d jobs", n)
	}
	for i, id := range minted {
		if v, ok, err := jobs.Get(ctx, id); !ok || err != nil || v != i {
			t.Fatalf("job %d: %v %v %v", i, v, ok, err)
		}
	}
}

func TestNoQuorumFailsFastAndClosed(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	c := cluster.Client(handlestore.Config{Namespace: "go-quorum", CallTimeout: 2 * time.Second, AttemptTimeout: 500 * time.Millisecond})
	tool := c.StateTool(handlestore.StateToolOptions{})
	ctx := testkit.Ctx(t)
	got(tool.Store(ctx, "before", 1))(t)
	cluster.Kill(1)
	cluster.Kill(2)
	start := time.Now()
	_, err := tool.Store(context.Background(), "during", 1)
	if !errors.Is(err, handlestore.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v: not bounded by the deadline", took)
	}
	cluster.Spawn(1)
	cluster.Spawn(2)
	cluster.WaitLeader(30 * time.Second)
	var v int
	if ok, err := tool.Get(ctx, "before", &v); !ok || err != nil || v != 1 {
		t.Fatalf("%v %v %v", v, ok, err)
	}
}
