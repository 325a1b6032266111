package handlestore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// A node's detail arrives through grpc-go's own parsing of the
// google.rpc.Status. A node of the previous release sent the bare
// ErrorDetail, which grpc-go reads as a google.rpc.Status (most parse, as
// one of code 0) and then answers INTERNAL "mismatch": the client keeps the
// node's code, message and reason all the same.
func TestAnErrorCarriesTheNodesReasonCodeAndMessage(t *testing.T) {
	forms := map[string]func(context.Context, codes.Code, string, *pb.ErrorDetail) error{
		"google.rpc.Status": refuse,
		"previous release":  refuseAsBefore,
	}
	for name, refusal := range forms {
		nodes := startFakes(t, 1)
		nodes[0].exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
			return nil, refusal(ctx, codes.FailedPrecondition, `entry "k" is at "7"`, &pb.ErrorDetail{Reason: "revision_mismatch", CurrentRevision: 7})
		}
		c := fakeClient(t, nodes, Config{})
		_, err := c.StateTool(StateToolOptions{}).Exists(context.Background(), "k")
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %v is not an *Error", name, err)
		}
		if e.Reason != ReasonRevisionMismatch || e.Code != codes.FailedPrecondition || e.Message != `entry "k" is at "7"` || e.CurrentRevision != 7 {
			t.Fatalf("%s: got %+v", name, e)
		}
		if !errors.Is(err, ErrRevisionMismatch) || !errors.Is(err, ErrFailedPrecondition) || errors.Is(err, ErrPrecondition) {
			t.Fatalf("%s: %v matches the wrong error values", name, err)
		}
	}
}

func TestEveryReasonOfTheTableSurvivesTheTrip(t *testing.T) {
	nodes := startFakes(t, 1)
	c := fakeClient(t, nodes, Config{CallTimeout: 200 * time.Millisecond})
	for _, r := range Reasons() {
		if r.Retry() != RetryNo {
			continue
		}
		nodes[0].exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
			return nil, refuse(ctx, r.Code(), "why", &pb.ErrorDetail{Reason: string(r)})
		}
		_, err := c.StateTool(StateToolOptions{}).Exists(context.Background(), "k")
		var e *Error
		if !errors.As(err, &e) || e.Reason != r || e.Code != r.Code() || e.Message != "why" {
			t.Errorf("%s: got %#v", r, err)
		}
	}
}

func TestARefusalNamingTheLeaderSendsTheCallThere(t *testing.T) {
	nodes := startFakes(t, 3)
	leader := nodes[2].addr
	nodes[0].exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
		return nil, refuse(ctx, codes.Unavailable, "not the leader", &pb.ErrorDetail{Reason: "not_leader", LeaderId: 3, LeaderAddr: leader})
	}
	c := fakeClient(t, nodes, Config{})
	if ok, err := c.StateTool(StateToolOptions{}).Exists(context.Background(), "k"); err != nil || !ok {
		t.Fatalf("exists: %v %v", ok, err)
	}
	if nodes[1].calls.Load() != 0 || c.Preferred() != leader {
		t.Fatalf("went to node 2 (%d calls); preferred %s, want %s", nodes[1].calls.Load(), c.Preferred(), leader)
	}
}

func TestNoNodeServingEndsAtTheContextsDeadline(t *testing.T) {
	nodes := startFakes(t, 2)
	for _, f := range nodes {
		f.exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
			return nil, refuse(ctx, codes.Unavailable, "no quorum", &pb.ErrorDetail{Reason: "no_quorum"})
		}
	}
	c := fakeClient(t, nodes, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.StateTool(StateToolOptions{}).Exists(ctx, "k")
	var d *DeadlineError
	if !errors.As(err, &d) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrDeadlineExceeded) || !errors.Is(d.Last, ErrNoQuorum) {
		t.Fatalf("got %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("took %v past a 300 ms deadline", took)
	}
	if nodes[0].calls.Load() < 2 || nodes[1].calls.Load() < 2 {
		t.Fatalf("not retried on both nodes: %d, %d", nodes[0].calls.Load(), nodes[1].calls.Load())
	}
}

func TestACancelledCallEndsWithTheContextsError(t *testing.T) {
	nodes := startFakes(t, 1)
	nodes[0].exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
		return nil, refuse(ctx, codes.Unavailable, "shutting down", &pb.ErrorDetail{Reason: "shutdown"})
	}
	c := fakeClient(t, nodes, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := c.StateTool(StateToolOptions{}).Exists(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestMalformedInputIsRefusedBeforeAnyCall(t *testing.T) {
	nodes := startFakes(t, 1)
	c := fakeClient(t, nodes, Config{})
	ctx := context.Background()
	tool := c.StateTool(StateToolOptions{})
	carts, err := NewHandleStore[map[string]int](c, "cart", HandleStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	calls := []func() error{
		func() error { _, err := tool.Store(ctx, "a//b", 1); return err },
		func() error { _, err := tool.Store(ctx, "/a", 1); return err },
		func() error { _, err := tool.Retrieve(ctx, "a\x00b"); return err },
		func() error { _, err := tool.Exists(ctx, ""); return err },
		func() error { _, err := tool.DeletePrefix(ctx, "", 0); return err },
		func() error {
			_, err := tool.BatchStore(ctx, []StoreItem{{Key: "ok", Value: 1}, {Key: "bad/", Value: 2}})
			return err
		},
		func() error { _, _, err := carts.Get(ctx, "not-an-id"); return err },
		func() error { _, _, err := carts.Get(ctx, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"); return err }, // 130 bits
		func() error { _, err := carts.Put(ctx, "bad prefix-"+NewHandleID(""), nil, 0); return err },
		func() error { _, err := carts.Delete(ctx, ""); return err },
		func() error { _, err := NewHandleStore[int](c, "no/slash", HandleStoreOptions{}); return err },
		func() error { _, err := c.WithNamespace("bad ns"); return err },
		func() error { _, err := c.Watch(ctx, WatchTarget{}, WatchOptions{}); return err },
	}
	for i, call := range calls {
		if err := call(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("call %d: got %v, want an invalid argument", i, err)
		}
	}
	if _, err := carts.Mint(ctx, map[string]int{"ok": 1}, 0); err == nil {
		t.Log("a well-formed mint reaches the node")
	}
	if n := nodes[0].calls.Load(); n != 1 {
		t.Fatalf("%d calls reached the node; want only the well-formed mint's", n)
	}
}

func TestEveryCallCarriesTheBearerToken(t *testing.T) {
	nodes := startFakes(t, 1)
	nodes[0].exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		return &pb.ExistsResponse{Exists: slices.Equal(md.Get("authorization"), []string{"Bearer tok-1"})}, nil
	}
	c := fakeClient(t, nodes, Config{Token: "tok-1"})
	if ok, err := c.StateTool(StateToolOptions{}).Exists(context.Background(), "k"); !ok || err != nil {
		t.Fatalf("the token did not arrive: %v %v", ok, err)
	}
}
