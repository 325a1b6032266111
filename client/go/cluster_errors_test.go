package handlestore_test

import (
	"errors"
	"testing"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	handlestore "github.com/handlestore/handlestore/client/go"
	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// detailOf is the ErrorDetail among a status's details, as grpc-go parses
// them (status.Details, the type registered by the generated code).
func detailOf(t *testing.T, st *status.Status) *pb.ErrorDetail {
	t.Helper()
	for _, d := range st.Details() {
		if e, ok := d.(*pb.ErrorDetail); ok {
			return e
		}
	}
	t.Fatalf("no ErrorDetail in %v (details %v)", st, st.Details())
	return nil
}

// A real node's errors arrive with their reason through grpc-go's own
// status parsing: of a call (status.FromError) and of a write's failure
// inside a Writes.Submit answer (its details are a google.rpc.Status too).
func TestANodesErrorsParseAsGoogleRpcStatus(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	leader := cluster.WaitLeader(30 * time.Second)
	client := cluster.Client(handlestore.Config{})
	ctx := testkit.Ctx(t)
	carts := got(handlestore.NewHandleStore[cart](client, "errs", handlestore.HandleStoreOptions{}))(t)
	id := got(carts.Mint(ctx, cart{}, 0))(t)
	v, _ := got2(carts.GetVersioned(ctx, id))(t)

	cc := got(grpc.NewClient("passthrough:///"+cluster.Node(leader).Addr, grpc.WithTransportCredentials(insecure.NewCredentials())))(t)
	t.Cleanup(func() { _ = cc.Close() })
	stale := &pb.PutRequest{Store: "errs", Id: id, Value: []byte(`{}`), ExpectedRevision: proto.Uint64(v.ModRevision + 1000)}
	_, err := pb.NewHandlesClient(cc).Put(ctx, stale)
	st, _ := status.FromError(err)
	if d := detailOf(t, st); st.Code() != codes.FailedPrecondition || d.GetReason() != "revision_mismatch" || d.GetCurrentRevision() != v.ModRevision {
		t.Fatalf("a lost compare-and-set: %v, %v", st, d)
	}
	_, err = pb.NewHandlesClient(cc).Get(ctx, &pb.GetRequest{Store: "errs", Id: handlestore.NewHandleID("")})
	st, _ = status.FromError(err)
	if d := detailOf(t, st); st.Code() != codes.NotFound || d.GetReason() != "not_found" {
		t.Fatalf("an unknown handle: %v, %v", st, d)
	}

	answer := got(pb.NewWritesClient(cc).Submit(ctx, &pb.SubmitRequest{Writes: []*pb.Write{{Op: &pb.Write_Put{Put: stale}}}}))(t)
	f := answer.GetResults()[0].GetFailure()
	rich := &spb.Status{}
	if err := proto.Unmarshal(f.GetDetails(), rich); err != nil || rich.GetCode() != f.GetCode() || rich.GetMessage() != f.GetMessage() {
		t.Fatalf("a write's failure: %v (%v)", f, err)
	}
	if d := detailOf(t, status.FromProto(rich)); d.GetReason() != "revision_mismatch" || d.GetCurrentRevision() != v.ModRevision {
		t.Fatalf("a write's failure: %v", d)
	}

	// The client keeps both (its puts go through Writes.Submit).
	_, err = carts.Put(ctx, id, cart{}, handlestore.TTLDefault, handlestore.IfRevision(v.ModRevision+1000))
	var e *handlestore.Error
	if !errors.As(err, &e) || e.Reason != handlestore.ReasonRevisionMismatch || e.CurrentRevision != v.ModRevision {
		t.Fatalf("the client's compare-and-set: %v", err)
	}
}
