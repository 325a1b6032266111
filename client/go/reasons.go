package handlestore

import "google.golang.org/grpc/codes"

// Reason is a machine-readable reason of the error table
// (proto/reasons.txt), as a node sends it in an error's ErrorDetail. The
// constants (ReasonNotFound, ...) are generated into reasons_gen.go.
type Reason string

// Retry says what the client does on its own with an error of a reason.
type Retry int

const (
	// RetryNo: the caller gets the error at once.
	RetryNo Retry = iota
	// RetryYes: the call is retried (on another node, after a backoff),
	// with the same write id for a write, until the call's deadline.
	RetryYes
	// RetryResume: a watch resumes from the last revision it delivered.
	RetryResume
)

type reasonRow struct {
	reason Reason
	code   codes.Code
	retry  Retry
}

func rowOf(r Reason) (reasonRow, bool) {
	for _, row := range reasonTable {
		if row.reason == r {
			return row, true
		}
	}
	return reasonRow{}, false
}

// Reasons lists every reason of the error table, in its order.
func Reasons() []Reason {
	out := make([]Reason, len(reasonTable))
	for i, row := range reasonTable {
		out[i] = row.reason
	}
	return out
}

// Known reports whether r is a reason of this build's table (a newer node
// may send one it does not know).
func (r Reason) Known() bool {
	_, ok := rowOf(r)
	return ok
}

// Code is the gRPC code a reason always travels with (codes.Unknown for an
// unknown reason).
func (r Reason) Code() codes.Code {
	if row, ok := rowOf(r); ok {
		return row.code
	}
	return codes.Unknown
}

// Retry says whether the client retries errors of this reason.
func (r Reason) Retry() Retry {
	row, _ := rowOf(r)
	return row.retry
}
