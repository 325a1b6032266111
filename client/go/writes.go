package handlestore

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// Write coalescing: concurrent writes of one client share calls of
// Writes.Submit (coalesce.go says how). Nothing else changes for a write:
// it keeps its own write id, gets its own answer or error, and is retried
// with the others when the call fails in a way another node can fix (the
// node answers the writes that had already succeeded from its memory of
// their write ids, so none applies twice).

// queuedWrite is a write and its id, kept until the write is answered.
type queuedWrite struct {
	write  *pb.Write
	ticket *ticket
}

type writeAnswer = *pb.WriteResult

// failureOf is the status of a Submit's result that failed, if it did.
func failureOf(f *pb.WriteFailure) (rpcStatus, bool) {
	if f == nil {
		return rpcStatus{}, false
	}
	return statusOfFailure(f), true
}

// retryableIn is the first failure among results that another node could
// fix.
func retryableIn[T any](results []T, failure func(T) *pb.WriteFailure) check {
	return func() (rpcStatus, bool) {
		for _, r := range results {
			if s, failed := failureOf(failure(r)); failed && decide(s).retry {
				return s, true
			}
		}
		return rpcStatus{}, false
	}
}

// submitWrites is one call of Writes.Submit with failover and retries.
func (k *core) submitWrites(ctx context.Context, items []queuedWrite) ([]result[writeAnswer], error) {
	defer func() {
		for _, q := range items {
			q.ticket.release()
		}
	}()
	req := &pb.SubmitRequest{Writes: make([]*pb.Write, len(items))}
	for i, q := range items {
		req.Writes[i] = q.write
	}
	resp := &pb.SubmitResponse{}
	ok := func() (rpcStatus, bool) {
		return retryableIn(resp.GetResults(), (*pb.WriteResult).GetFailure)()
	}
	if err := k.invoke(ctx, pb.Writes_Submit_FullMethodName, req, resp, ok); err != nil {
		return nil, err
	}
	out := make([]result[writeAnswer], len(resp.GetResults()))
	for i, r := range resp.GetResults() {
		if s, failed := failureOf(r.GetFailure()); failed {
			out[i].err = s.toError()
		} else {
			out[i].val = r
		}
	}
	return out, nil
}

func newWriteCoalescer(k *core, maxCalls int) *coalescer[queuedWrite, writeAnswer] {
	return &coalescer[queuedWrite, writeAnswer]{
		submit:  k.submitWrites,
		what:    "write",
		bounds:  bounds{maxCalls: maxCalls, maxItems: wireMaxSubmitWrites, maxBytes: wireMaxSubmitWriteBytes},
		timeout: k.callTimeout,
		discard: func(q queuedWrite) { q.ticket.release() },
	}
}

// write sends one write (built with the write id it is given), alone or
// with other callers' writes, and gives its result.
func (c *Client) write(ctx context.Context, build func(*pb.WriteId) *pb.Write) (*pb.WriteResult, error) {
	t := c.ids.take()
	w := build(t.id)
	return c.core.writes.run(ctx, queuedWrite{write: w, ticket: t}, proto.Size(w))
}

// unexpected: the node answered a write or read with another kind.
func unexpected(what string, got any) error {
	return fmt.Errorf("handlestore: the node answered a %s with %T", what, got)
}
