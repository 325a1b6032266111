package handlestore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

func TestConcurrentWritesShareSubmitCalls(t *testing.T) {
	nodes := startFakes(t, 1)
	nodes[0].submit = func(ctx context.Context, req *pb.SubmitRequest) (*pb.SubmitResponse, error) {
		time.Sleep(30 * time.Millisecond)
		return stored(ctx, req)
	}
	c := fakeClient(t, nodes, Config{MaxWriteCalls: 1})
	tool := c.StateTool(StateToolOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := tool.Store(context.Background(), fmt.Sprintf("k/%d", i), i)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := c.WriteStats()
	if s.Sent != 40 || s.Calls >= 20 {
		t.Fatalf("%d writes in %d calls: not coalesced", s.Sent, s.Calls)
	}
}

// A Submit whose writes another node must serve goes there whole, every
// write with the id it had.
func TestARetriedSubmitKeepsEveryWritesID(t *testing.T) {
	nodes := startFakes(t, 2)
	nodes[0].submit = func(ctx context.Context, req *pb.SubmitRequest) (*pb.SubmitResponse, error) {
		raw, _ := proto.Marshal(&pb.ErrorDetail{Reason: "not_leader", LeaderAddr: nodes[1].addr})
		resp := &pb.SubmitResponse{}
		for range req.GetWrites() {
			f := &pb.WriteFailure{Code: 14, Message: "not the leader", Details: raw}
			resp.Results = append(resp.Results, &pb.WriteResult{Result: &pb.WriteResult_Failure{Failure: f}})
		}
		return resp, nil
	}
	c := fakeClient(t, nodes, Config{})
	if _, err := c.StateTool(StateToolOptions{}).Store(context.Background(), "k", 1); err != nil {
		t.Fatal(err)
	}
	first, again := nodes[0].seen, nodes[1].seen
	if len(first) != 1 || len(again) != 1 || !proto.Equal(first[0], again[0]) || first[0].GetClientId() != c.ClientID() {
		t.Fatalf("ids %v then %v", first, again)
	}
}

func TestAWriteIDNeverClaimsALowerOneInFlightIsDone(t *testing.T) {
	ids := newWriteIDs()
	a, b, c := ids.take(), ids.take(), ids.take()
	if a.id.GetSeq() != 1 || c.id.GetSeq() != 3 || c.id.GetFirstIncompleteSeq() != 1 {
		t.Fatalf("got %v %v %v", a.id, b.id, c.id)
	}
	b.release()
	if d := ids.take(); d.id.GetFirstIncompleteSeq() != 1 {
		t.Fatalf("1 is in flight, yet %v", d.id)
	}
	a.release()
	a.release()
	if e := ids.take(); e.id.GetFirstIncompleteSeq() != 3 {
		t.Fatalf("3 is the lowest in flight, yet %v", e.id)
	}
	if ids.clientID == 0 || ids.clientID == ^uint64(0) {
		t.Fatal("client id out of range")
	}
}

func TestAQueuedWriteWhoseCallerGaveUpIsNeverSent(t *testing.T) {
	nodes := startFakes(t, 1)
	release := make(chan struct{})
	nodes[0].submit = func(ctx context.Context, req *pb.SubmitRequest) (*pb.SubmitResponse, error) {
		<-release
		return stored(ctx, req)
	}
	c := fakeClient(t, nodes, Config{MaxWriteCalls: 1})
	tool := c.StateTool(StateToolOptions{})
	go func() { _, _ = tool.Store(context.Background(), "first", 1) }()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := tool.Store(ctx, "second", 2); err == nil {
		t.Fatal("the queued write's deadline passed, yet it succeeded")
	}
	close(release)
	time.Sleep(50 * time.Millisecond)
	if n := nodes[0].calls.Load(); n != 1 {
		t.Fatalf("%d calls; the given-up write must not be sent", n)
	}
}
