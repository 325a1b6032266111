package handlestore

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// Conn's calls against fake nodes: how refusals move them, and where a
// stream stops being retried. cluster_conn_test.go has them on a cluster.

type watchStream = grpc.ServerStreamingServer[pb.WatchResponse]

func notLeader(ctx context.Context, leader string) error {
	return refuse(ctx, codes.Unavailable, "not the leader", &pb.ErrorDetail{Reason: "not_leader", LeaderAddr: leader})
}

func TestConnUnaryFollowsTheLeaderWithTheCallersOptions(t *testing.T) {
	nodes := startFakes(t, 3)
	nodes[0].exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
		return nil, notLeader(ctx, nodes[2].addr)
	}
	nodes[2].exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
		_ = grpc.SetHeader(ctx, metadata.Pairs("x-answered-by", "2"))
		return &pb.ExistsResponse{Exists: true}, nil
	}
	c := fakeClient(t, nodes, Config{})
	var header metadata.MD
	resp, err := pb.NewStateClient(c.Conn()).Exists(context.Background(), &pb.ExistsRequest{Key: "k"}, grpc.Header(&header))
	if err != nil || !resp.GetExists() {
		t.Fatalf("%v %v", resp, err)
	}
	if got := header.Get("x-answered-by"); len(got) != 1 || got[0] != "2" {
		t.Fatalf("the caller's grpc.Header got %v", header)
	}
	if c.Preferred() != nodes[2].addr || nodes[1].calls.Load() != 0 {
		t.Fatalf("preferred %s, node 1 called %d times", c.Preferred(), nodes[1].calls.Load())
	}
}

// watchOn opens a watch through Conn and reads n answers.
func watchOn(c *Client, n int) ([]*pb.WatchResponse, error) {
	stream, err := pb.NewWatchClient(c.Conn()).Watch(context.Background(), &pb.WatchRequest{Target: &pb.WatchRequest_Prefix{Prefix: "p/"}})
	if err != nil {
		return nil, err
	}
	var got []*pb.WatchResponse
	for range n {
		m, err := stream.Recv()
		if err != nil {
			return got, err
		}
		got = append(got, m)
	}
	return got, nil
}

// answers sends created, then the revisions, waiting `gap` before each.
func answers(gap time.Duration, revisions ...uint64) func(*pb.WatchRequest, watchStream) error {
	return func(_ *pb.WatchRequest, s watchStream) error {
		if err := s.Send(&pb.WatchResponse{Created: true}); err != nil {
			return err
		}
		for _, r := range revisions {
			time.Sleep(gap)
			if err := s.Send(&pb.WatchResponse{Revision: r}); err != nil {
				return err
			}
		}
		<-s.Context().Done()
		return nil
	}
}

func TestConnStreamBeforeItsFirstAnswer(t *testing.T) {
	t.Run("a refusal opens it again where it points, with the same request", func(t *testing.T) {
		nodes := startFakes(t, 3)
		nodes[0].watch = func(_ *pb.WatchRequest, s watchStream) error { return notLeader(s.Context(), nodes[2].addr) }
		var seen atomic.Value
		nodes[2].watch = func(req *pb.WatchRequest, s watchStream) error {
			seen.Store(req.GetPrefix())
			return answers(0, 7)(req, s)
		}
		c := fakeClient(t, nodes, Config{})
		got, err := watchOn(c, 2)
		if err != nil || !got[0].GetCreated() || got[1].GetRevision() != 7 || seen.Load() != "p/" {
			t.Fatalf("%v %v, the leader saw %v", got, err, seen.Load())
		}
		if c.Preferred() != nodes[2].addr || nodes[1].calls.Load() != 0 {
			t.Fatalf("preferred %s, node 1 called %d times", c.Preferred(), nodes[1].calls.Load())
		}
	})

	t.Run("a refusal no other node can fix ends it", func(t *testing.T) {
		nodes := startFakes(t, 2)
		nodes[0].watch = func(_ *pb.WatchRequest, s watchStream) error {
			return refuse(s.Context(), codes.InvalidArgument, "bad prefix", &pb.ErrorDetail{Reason: "invalid_argument"})
		}
		_, err := watchOn(fakeClient(t, nodes, Config{}), 1)
		if !errors.Is(err, ErrInvalidArgument) || nodes[1].calls.Load() != 0 {
			t.Fatalf("%v, node 1 called %d times", err, nodes[1].calls.Load())
		}
	})

	t.Run("the call timeout bounds the wait for the first answer", func(t *testing.T) {
		nodes := startFakes(t, 1)
		nodes[0].watch = func(_ *pb.WatchRequest, s watchStream) error {
			<-s.Context().Done()
			return nil
		}
		c := fakeClient(t, nodes, Config{CallTimeout: 200 * time.Millisecond})
		ended := make(chan error, 1)
		go func() {
			_, err := watchOn(c, 1)
			ended <- err
		}()
		// Far past the call timeout (unbounded, the wait would end only when
		// the connection does).
		select {
		case err := <-ended:
			var d *DeadlineError
			if !errors.As(err, &d) {
				t.Fatalf("%v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the wait for the first answer outlived the call timeout")
		}
	})
}

func TestConnStreamAfterItsFirstAnswer(t *testing.T) {
	t.Run("it outlives the call timeout", func(t *testing.T) {
		nodes := startFakes(t, 1)
		nodes[0].watch = answers(400*time.Millisecond, 1, 2)
		got, err := watchOn(fakeClient(t, nodes, Config{CallTimeout: 200 * time.Millisecond}), 3)
		if err != nil || got[2].GetRevision() != 2 {
			t.Fatalf("%v %v", got, err)
		}
	})

	t.Run("a failure is the caller's, not retried", func(t *testing.T) {
		nodes := startFakes(t, 2)
		nodes[0].watch = func(_ *pb.WatchRequest, s watchStream) error {
			if err := s.Send(&pb.WatchResponse{Created: true}); err != nil {
				return err
			}
			return notLeader(s.Context(), nodes[1].addr)
		}
		got, err := watchOn(fakeClient(t, nodes, Config{}), 2)
		if len(got) != 1 || !errors.Is(err, ErrNotLeader) || nodes[1].calls.Load() != 0 {
			t.Fatalf("%v %v, node 1 called %d times", got, err, nodes[1].calls.Load())
		}
	})

	t.Run("the caller's cancel ends it with the context's error", func(t *testing.T) {
		nodes := startFakes(t, 1)
		nodes[0].watch = answers(0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stream, err := pb.NewWatchClient(fakeClient(t, nodes, Config{}).Conn()).Watch(ctx, &pb.WatchRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := stream.Recv(); !errors.Is(err, context.Canceled) {
			t.Fatalf("%#v", err)
		}
	})

	t.Run("its end is io.EOF", func(t *testing.T) {
		nodes := startFakes(t, 1)
		nodes[0].watch = func(_ *pb.WatchRequest, s watchStream) error { return s.Send(&pb.WatchResponse{Created: true}) }
		got, err := watchOn(fakeClient(t, nodes, Config{}), 2)
		if len(got) != 1 || err != io.EOF {
			t.Fatalf("%v %v", got, err)
		}
	})
}

// Invoke (deprecated) is Conn's Invoke until it goes.
func TestInvokeIsConns(t *testing.T) {
	nodes := startFakes(t, 2)
	nodes[0].exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
		return nil, notLeader(ctx, nodes[1].addr)
	}
	c := fakeClient(t, nodes, Config{})
	resp := &pb.ExistsResponse{}
	if err := c.Invoke(context.Background(), pb.State_Exists_FullMethodName, &pb.ExistsRequest{Key: "k"}, resp); err != nil || !resp.GetExists() {
		t.Fatalf("%v %v", resp, err)
	}
	if c.Preferred() != nodes[1].addr {
		t.Fatalf("preferred %s", c.Preferred())
	}
}
