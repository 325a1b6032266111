package handlestore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// retryCase is one case of the shared retry vectors
// (proto/vectors/retry.json): a status and what the client does with it.
type retryCase struct {
	Code      codes.Code `json:"code"`
	Reason    *string    `json:"reason"`
	Message   string     `json:"message"`
	Call      string     `json:"call"`
	Watch     string     `json:"watch"`
	ErrorCode codes.Code `json:"error_code"`
	Why       string     `json:"why"`
}

func retryCases(t *testing.T) []retryCase {
	t.Helper()
	// The package's directory is client/go.
	raw, err := os.ReadFile(filepath.Join("..", "..", "proto", "vectors", "retry.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []retryCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 40 {
		t.Fatalf("%d cases", len(doc.Cases))
	}
	return doc.Cases
}

// details is the case's grpc-status-details-bin as a node sends it: a
// google.rpc.Status holding the ErrorDetail; nil without a reason.
func (c retryCase) details(t *testing.T) []byte {
	t.Helper()
	if c.Reason == nil {
		return nil
	}
	detail, err := anypb.New(&pb.ErrorDetail{Reason: *c.Reason})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := proto.Marshal(&spb.Status{Code: int32(c.Code), Message: c.Message, Details: []*anypb.Any{detail}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// asCall is the case as grpc-go hands a failed call over: the details
// trailer parsed into the status (as its transport does), or none.
func (c retryCase) asCall(t *testing.T, raw []byte) rpcStatus {
	t.Helper()
	st := &spb.Status{Code: int32(c.Code), Message: c.Message}
	if raw != nil {
		if err := proto.Unmarshal(raw, st); err != nil {
			t.Fatal(err)
		}
	}
	return statusOf(status.FromProto(st).Err(), nil)
}

// check holds the decision on a status to the case.
func (c retryCase) check(t *testing.T, path string, s rpcStatus) {
	t.Helper()
	d := decide(s)
	call, watch := map[bool]string{true: "retry", false: "give_up"}[d.retry], map[bool]string{true: "resume", false: "give_up"}[d.resume]
	got := s.toError().Code
	if d.tls {
		got = s.tlsError("").Code
	}
	if call != c.Call || watch != c.Watch || (c.ErrorCode != codes.OK && got != c.ErrorCode) {
		t.Errorf("%v %v %q (%s): call %s, watch %s, error %v; want %s, %s, %v", c.Code, c.reason(), c.Message, path, call, watch, got, c.Call, c.Watch, c.ErrorCode)
	}
}

func (c retryCase) reason() string {
	if c.Reason == nil {
		return "(no reason)"
	}
	return *c.Reason
}

// Each case as a call's status and as a write's failure inside a Submit
// answer, both through decide (the call loop, Submit's per-item failures
// and the watch use it alone).
func TestRetryVectors(t *testing.T) {
	for _, c := range retryCases(t) {
		raw := c.details(t)
		c.check(t, "a call", c.asCall(t, raw))
		f := &pb.WriteFailure{Code: int32(c.Code), Message: c.Message, Details: raw}
		c.check(t, "a write's failure", statusOfFailure(f))
	}
}
