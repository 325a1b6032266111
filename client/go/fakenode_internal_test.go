package handlestore

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// fakeNode answers as a node does, refusals included: the ErrorDetail
// goes in the google.rpc.Status of grpc-status-details-bin, the leader in
// x-handlestore-leader. Fast tests of what the client does with answers.
type fakeNode struct {
	pb.UnimplementedStateServer
	pb.UnimplementedWritesServer
	pb.UnimplementedWatchServer
	addr   string
	calls  atomic.Int64
	exists func(ctx context.Context, req *pb.ExistsRequest) (*pb.ExistsResponse, error)
	submit func(ctx context.Context, req *pb.SubmitRequest) (*pb.SubmitResponse, error)
	watch  func(req *pb.WatchRequest, stream grpc.ServerStreamingServer[pb.WatchResponse]) error

	mu   sync.Mutex
	seen []*pb.WriteId
}

func (f *fakeNode) Exists(ctx context.Context, req *pb.ExistsRequest) (*pb.ExistsResponse, error) {
	f.calls.Add(1)
	return f.exists(ctx, req)
}

func (f *fakeNode) Submit(ctx context.Context, req *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	f.calls.Add(1)
	f.mu.Lock()
	for _, w := range req.GetWrites() {
		f.seen = append(f.seen, w.GetStore().GetWriteId())
	}
	f.mu.Unlock()
	return f.submit(ctx, req)
}

func (f *fakeNode) Watch(req *pb.WatchRequest, stream grpc.ServerStreamingServer[pb.WatchResponse]) error {
	f.calls.Add(1)
	return f.watch(req, stream)
}

// refuse is a node's refusal: the status with its detail, as grpc-go's
// server sends details (a node sends the same bytes).
func refuse(ctx context.Context, code codes.Code, msg string, d *pb.ErrorDetail) error {
	if d.GetLeaderAddr() != "" {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(LeaderHeader, d.GetLeaderAddr()))
	}
	st, err := status.New(code, msg).WithDetails(d)
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// refuseAsBefore is the refusal of a node of the previous release: the
// bare ErrorDetail in the details trailer.
func refuseAsBefore(ctx context.Context, code codes.Code, msg string, d *pb.ErrorDetail) error {
	raw, _ := proto.Marshal(d)
	md := metadata.Pairs(detailsKey, string(raw))
	if d.GetLeaderAddr() != "" {
		md.Append(LeaderHeader, d.GetLeaderAddr())
	}
	_ = grpc.SetTrailer(ctx, md)
	return status.Error(code, msg)
}

// stored answers every write of a Submit as stored.
func stored(_ context.Context, req *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	resp := &pb.SubmitResponse{}
	for i := range req.GetWrites() {
		resp.Results = append(resp.Results, &pb.WriteResult{Result: &pb.WriteResult_Store{Store: &pb.StoreResponse{Revision: uint64(i + 1)}}})
	}
	return resp, nil
}

func startFakes(t *testing.T, n int) []*fakeNode {
	t.Helper()
	var nodes []*fakeNode
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f := &fakeNode{addr: l.Addr().String(), submit: stored}
		f.exists = func(context.Context, *pb.ExistsRequest) (*pb.ExistsResponse, error) {
			return &pb.ExistsResponse{Exists: true}, nil
		}
		s := grpc.NewServer()
		pb.RegisterStateServer(s, f)
		pb.RegisterWritesServer(s, f)
		pb.RegisterWatchServer(s, f)
		go func() { _ = s.Serve(l) }()
		t.Cleanup(s.Stop)
		nodes = append(nodes, f)
	}
	return nodes
}

func fakeClient(t *testing.T, nodes []*fakeNode, cfg Config) *Client {
	t.Helper()
	for _, f := range nodes {
		cfg.Endpoints = append(cfg.Endpoints, f.addr)
	}
	if cfg.Backoff.Base == 0 {
		cfg.Backoff = Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
