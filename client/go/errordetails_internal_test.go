package handlestore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// errorDetailsCase is one case of the shared error-details vectors
// (proto/vectors/error_details.json): a status's details, in the form a
// node sends (google.rpc.Status), the previous release's (the bare
// ErrorDetail), or neither, and the detail a client must find.
type errorDetailsCase struct {
	Name    string `json:"name"`
	Code    uint32 `json:"code"`
	Message string `json:"message"`
	Details string `json:"details"`
	Expect  *struct {
		Reason          string `json:"reason"`
		LeaderID        uint64 `json:"leader_id"`
		LeaderAddr      string `json:"leader_addr"`
		CurrentRevision uint64 `json:"current_revision"`
		CompactRevision uint64 `json:"compact_revision"`
	} `json:"expect"`
}

func errorDetailsCases(t *testing.T) []errorDetailsCase {
	t.Helper()
	// The package's directory is client/go.
	raw, err := os.ReadFile(filepath.Join("..", "..", "proto", "vectors", "error_details.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []errorDetailsCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 10 {
		t.Fatalf("%d cases", len(doc.Cases))
	}
	return doc.Cases
}

// check holds a status the client read to its case.
func (c errorDetailsCase) check(t *testing.T, path string, s rpcStatus) {
	t.Helper()
	e := s.toError()
	if e.Code != codes.Code(c.Code) || e.Message != c.Message {
		t.Errorf("%s (%s): code %v message %q", c.Name, path, e.Code, e.Message)
	}
	if c.Expect == nil {
		if e.Reason != "" || e.LeaderAddr != "" || e.LeaderID != 0 {
			t.Errorf("%s (%s): a detail where there is none: %+v", c.Name, path, e)
		}
		return
	}
	x := c.Expect
	if string(e.Reason) != x.Reason || e.LeaderID != x.LeaderID || e.LeaderAddr != x.LeaderAddr ||
		e.CurrentRevision != x.CurrentRevision || e.CompactRevision != x.CompactRevision {
		t.Errorf("%s (%s): got %+v, want %+v", c.Name, path, e, *x)
	}
}

// Each case as a write's failure inside a Submit answer.
func TestErrorDetailsVectorsInAWritesFailure(t *testing.T) {
	for _, c := range errorDetailsCases(t) {
		raw, err := hex.DecodeString(c.Details)
		if err != nil {
			t.Fatal(err)
		}
		f := &pb.WriteFailure{Code: int32(c.Code), Message: c.Message, Details: raw}
		c.check(t, "a write's failure", statusOfFailure(f))
	}
}

// Each case as a call's grpc-status-details-bin, sent as it is by a
// grpc-go server and read as the client reads a call's status: through
// grpc-go's own parsing (status.FromError) for the new form.
func TestErrorDetailsVectorsInACallsTrailer(t *testing.T) {
	nodes := startFakes(t, 1)
	cc, err := grpc.NewClient("passthrough:///"+nodes[0].addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	for _, c := range errorDetailsCases(t) {
		raw, err := hex.DecodeString(c.Details)
		if err != nil {
			t.Fatal(err)
		}
		nodes[0].exists = func(ctx context.Context, _ *pb.ExistsRequest) (*pb.ExistsResponse, error) {
			if len(raw) > 0 {
				_ = grpc.SetTrailer(ctx, metadata.Pairs(detailsKey, string(raw)))
			}
			return nil, status.Error(codes.Code(c.Code), c.Message)
		}
		var trailer metadata.MD
		_, err = pb.NewStateClient(cc).Exists(context.Background(), &pb.ExistsRequest{Key: "k"}, grpc.Trailer(&trailer))
		c.check(t, "a call's trailer", statusOf(err, trailer))
	}
}
