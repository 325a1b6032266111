package handlestore

import (
	"strconv"
	"strings"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// detailsKey is the trailer a status's details travel in. A node puts a
// google.rpc.Status there whose details hold its ErrorDetail, which grpc-go
// parses itself (status.FromError(err).Details(); the generated code
// registers the type). A node of the previous release put the bare
// ErrorDetail there: read from the trailer, for one release.
const detailsKey = "grpc-status-details-bin"

// mismatchPrefix starts the status grpc-go makes up when the details
// trailer parses as a google.rpc.Status of another code: a bare ErrorDetail
// often does (its fields look like a Status with code 0). The node's code
// and message are kept inside its message.
const mismatchPrefix = "grpc-status-details-bin mismatch: grpc-status="

// rpcStatus is a status as a node answered it: of a call, or of one write
// (or read) inside a Submit.
type rpcStatus struct {
	code    codes.Code
	message string
	detail  *pb.ErrorDetail
	// trailer of a call (nil for a write's status).
	trailer metadata.MD
}

// detailIn is the first ErrorDetail among a status's details, or nil.
func detailIn(st *status.Status) *pb.ErrorDetail {
	for _, d := range st.Details() {
		if e, ok := d.(*pb.ErrorDetail); ok {
			return e
		}
	}
	return nil
}

// bareDetail reads the previous release's form, the bare ErrorDetail; nil
// unless raw is one that names a reason (as a node's always does: a
// google.rpc.Status parsed this way never does, its field 1 being a varint).
func bareDetail(raw []byte) *pb.ErrorDetail {
	d := &pb.ErrorDetail{}
	if proto.Unmarshal(raw, d) != nil || d.GetReason() == "" {
		return nil
	}
	return d
}

// decodeDetail reads the ErrorDetail of a write's failure: a
// google.rpc.Status, as in a call's trailer, or the bare ErrorDetail of the
// previous release; empty when there is none.
func decodeDetail(raw []byte) *pb.ErrorDetail {
	st := &spb.Status{}
	if proto.Unmarshal(raw, st) == nil {
		if d := detailIn(status.FromProto(st)); d != nil {
			return d
		}
	}
	if d := bareDetail(raw); d != nil {
		return d
	}
	return &pb.ErrorDetail{}
}

// statusOf is the status of a failed call, from its error and trailer: the
// ErrorDetail from grpc-go's own parsing, else the previous release's bare
// one from the trailer, with the node's code and message taken back out of
// grpc-go's "mismatch" status.
func statusOf(err error, trailer metadata.MD) rpcStatus {
	st, _ := status.FromError(err)
	s := rpcStatus{code: st.Code(), message: st.Message(), trailer: trailer}
	if s.detail = detailIn(st); s.detail != nil {
		return s
	}
	s.detail = &pb.ErrorDetail{}
	if raw := trailer.Get(detailsKey); len(raw) == 1 {
		if d := bareDetail([]byte(raw[0])); d != nil {
			s.detail = d
		}
	}
	if s.code == codes.Internal && strings.HasPrefix(s.message, mismatchPrefix) {
		s.code, s.message = unmangle(s.message, s.detail)
	}
	return s
}

// unmangle recovers the node's code and message from grpc-go's mismatch
// status: "...grpc-status=<Code>, grpc-message=<quoted>, ...".
func unmangle(msg string, d *pb.ErrorDetail) (codes.Code, string) {
	rest := strings.TrimPrefix(msg, mismatchPrefix)
	name, rest, ok := strings.Cut(rest, ", grpc-message=")
	if !ok {
		return codes.Internal, msg
	}
	code, known := codeNamed(name)
	if !known {
		code = Reason(d.GetReason()).Code()
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return code, msg
	}
	text, err := strconv.Unquote(quoted)
	if err != nil {
		return code, msg
	}
	return code, text
}

// codeNamed is the code whose String() is name.
func codeNamed(name string) (codes.Code, bool) {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c.String() == name {
			return c, true
		}
	}
	return codes.Unknown, false
}

// statusOfFailure is the status a write's (or read's) own method would
// have answered, inside a Submit's answer.
func statusOfFailure(f *pb.WriteFailure) rpcStatus {
	return rpcStatus{code: codes.Code(f.GetCode()), message: f.GetMessage(), detail: decodeDetail(f.GetDetails())}
}

// toError is the client's error for a status: the node's reason when it
// travels with the status's code (a reason this build does not know is
// kept as it came), else none.
func (s rpcStatus) toError() *Error {
	reason := Reason(s.detail.GetReason())
	if reason.Known() && reason.Code() != s.code {
		reason = ""
	}
	return &Error{
		Reason:          reason,
		Code:            s.code,
		Message:         s.message,
		LeaderID:        s.detail.GetLeaderId(),
		LeaderAddr:      s.detail.GetLeaderAddr(),
		CurrentRevision: s.detail.GetCurrentRevision(),
		CompactRevision: s.detail.GetCompactRevision(),
	}
}
