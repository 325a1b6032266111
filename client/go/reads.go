package handlestore

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// Read coalescing, as the other clients': concurrent point reads of one
// client (handle gets, state retrieves) share calls of Reads.Submit. A lone
// read goes at once on its own method (Handles.Get, State.Retrieve); under
// load the reads queued meanwhile leave in one Reads.Submit. Each read is
// served exactly as its own method would serve it. A read the node left
// unserved because the response was full (batch_full) goes again in the
// next call; a node without the Reads service gets each read on its own
// method.

type readItem = *pb.Read

// readAnswer is a read's response; both nil if the handle or key is
// absent or expired.
type readAnswer struct {
	get      *pb.GetResponse
	retrieve *pb.RetrieveResponse
}

// readOne is a read on its own method.
func (k *core) readOne(ctx context.Context, r readItem) (readAnswer, error) {
	var a readAnswer
	var err error
	switch {
	case r.GetGet() != nil:
		a.get = &pb.GetResponse{}
		err = k.invoke(ctx, pb.Handles_Get_FullMethodName, r.GetGet(), a.get, nil)
	case r.GetRetrieve() != nil:
		a.retrieve = &pb.RetrieveResponse{}
		err = k.invoke(ctx, pb.State_Retrieve_FullMethodName, r.GetRetrieve(), a.retrieve, nil)
	default:
		return a, invalid("a read names no operation")
	}
	if errors.Is(err, ErrNotFound) {
		return readAnswer{}, nil
	}
	return a, err
}

// answerOf is one read's answer inside a Reads.Submit answer.
func answerOf(r *pb.ReadResult) result[readAnswer] {
	if s, failed := failureOf(r.GetFailure()); failed {
		e := s.toError()
		if errors.Is(e, ErrNotFound) {
			return result[readAnswer]{}
		}
		return result[readAnswer]{err: e}
	}
	a := readAnswer{get: r.GetGet(), retrieve: r.GetRetrieve()}
	if a.get == nil && a.retrieve == nil {
		return result[readAnswer]{err: unexpected("read", r.GetResult())}
	}
	return result[readAnswer]{val: a}
}

// submitReadsOnce is one call of Reads.Submit with failover and retries.
func (k *core) submitReadsOnce(ctx context.Context, reads []readItem) ([]result[readAnswer], error) {
	resp := &pb.ReadsResponse{}
	ok := func() (rpcStatus, bool) {
		return retryableIn(resp.GetResults(), (*pb.ReadResult).GetFailure)()
	}
	err := k.invoke(ctx, pb.Reads_Submit_FullMethodName, &pb.ReadsRequest{Reads: reads}, resp, ok)
	if errors.Is(err, ErrUnimplemented) {
		out := make([]result[readAnswer], len(reads))
		for i, r := range reads {
			out[i].val, out[i].err = k.readOne(ctx, r)
		}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if len(resp.GetResults()) != len(reads) {
		return nil, unexpected("batch of reads", resp)
	}
	out := make([]result[readAnswer], len(reads))
	for i, r := range resp.GetResults() {
		out[i] = answerOf(r)
	}
	return out, nil
}

func batchFull(r result[readAnswer]) bool {
	return errors.Is(r.err, ErrBatchFull)
}

// submitReads: one read alone on its own method; several in calls of
// Reads.Submit until each is answered.
func (k *core) submitReads(ctx context.Context, reads []readItem) ([]result[readAnswer], error) {
	if len(reads) == 1 {
		a, err := k.readOne(ctx, reads[0])
		return []result[readAnswer]{{val: a, err: err}}, nil
	}
	answers := make([]result[readAnswer], len(reads))
	pending := make([]int, len(reads))
	for i := range pending {
		pending[i] = i
	}
	for len(pending) > 0 {
		batch := make([]readItem, len(pending))
		for j, i := range pending {
			batch[j] = reads[i]
		}
		results, err := k.submitReadsOnce(ctx, batch)
		if err != nil {
			return nil, err
		}
		pending = keepUnserved(pending, results, answers)
	}
	return answers, nil
}

// keepUnserved files the served answers and gives the reads to send again.
// A node always serves a call's first read; one that served none gets its
// answers as they are.
func keepUnserved(pending []int, results, answers []result[readAnswer]) []int {
	noneServed := true
	for _, r := range results {
		noneServed = noneServed && batchFull(r)
	}
	var unserved []int
	for j, i := range pending {
		if batchFull(results[j]) && !noneServed {
			unserved = append(unserved, i)
		} else {
			answers[i] = results[j]
		}
	}
	return unserved
}

func newReadCoalescer(k *core, maxCalls int) *coalescer[readItem, readAnswer] {
	return &coalescer[readItem, readAnswer]{
		submit:  k.submitReads,
		what:    "read",
		bounds:  bounds{maxCalls: maxCalls, maxItems: wireMaxSubmitReads, maxBytes: wireMaxSubmitReadBytes},
		timeout: k.callTimeout,
		discard: func(readItem) {},
	}
}

// read reads one handle or state key, alone or with other callers' reads.
func (c *Client) read(ctx context.Context, r readItem) (readAnswer, error) {
	return c.core.reads.run(ctx, r, proto.Size(r))
}
