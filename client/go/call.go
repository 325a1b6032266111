package handlestore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// core is what a client and its clones share: the connections, the
// timing, and the calls that carry concurrent writes and reads.
type core struct {
	conns          *conns
	callTimeout    time.Duration
	attemptTimeout time.Duration
	backoff        Backoff
	writes         *coalescer[queuedWrite, writeAnswer]
	reads          *coalescer[readItem, readAnswer]
}

// check looks into a successful answer for a failure another node could
// fix (a write of a Submit refused with not_leader): then the attempt
// counts as failed with that status.
type check func() (rpcStatus, bool)

// outcome is one attempt's result.
type outcome struct {
	err    error
	retry  bool
	status rpcStatus
	// leader is the endpoint to go to next: the leader an answer named,
	// the node that answered, or after a refusal the next node.
	leader   int
	pushback time.Duration
	// cut: the call's context ended during the attempt.
	cut bool
}

// bound gives ctx a deadline (CallTimeout) if it has none, and says how
// long the call has.
func (k *core) bound(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	if d, ok := ctx.Deadline(); ok {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, time.Until(d)
	}
	ctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	return ctx, cancel, k.callTimeout
}

// invoke calls a unary method with failover, retries with backoff and the
// deadline: on the preferred node first (the leader, once known), then
// where a refusal points (the leader it names) or the next node. It
// returns the response in resp, or the error: the node's *Error, a
// *DeadlineError, or the context's error if it was cancelled. Every attempt
// carries opts (Conn's callers' own call options).
func (k *core) invoke(ctx context.Context, method string, req, resp any, ok check, opts ...grpc.CallOption) error {
	ctx, cancel, budget := k.bound(ctx)
	defer cancel()
	idx := k.conns.preferredIndex()
	var last error
	for tries := 0; ; tries++ {
		o := k.attempt(ctx, idx, method, req, resp, ok, opts)
		if o.cut {
			// The call's context ended during the attempt: the last refusal
			// says more than the cut.
			return ended(ctx, budget, cmp.Or(last, o.err))
		}
		if o.err == nil {
			k.conns.preferred.Store(int64(o.leader))
			return nil
		}
		if !o.retry {
			return o.err
		}
		last = o.err
		idx = o.leader
		k.conns.preferred.Store(int64(idx))
		if err := k.pause(ctx, max(k.backoff.wait(tries), o.pushback), budget, o.err); err != nil {
			return err
		}
	}
}

// pause waits before the next try, unless the deadline would pass first.
func (k *core) pause(ctx context.Context, wait, budget time.Duration, last error) error {
	if d, _ := ctx.Deadline(); time.Now().Add(wait).After(d) {
		return &DeadlineError{Deadline: budget, Last: last}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ended(ctx, budget, last)
	}
}

// ended is the error of a call whose context ended.
// Its deadline may have passed a moment before the context says so.
func ended(ctx context.Context, budget time.Duration, last error) error {
	if err := ctx.Err(); err == nil || errors.Is(err, context.DeadlineExceeded) {
		return &DeadlineError{Deadline: budget, Last: last}
	}
	return context.Cause(ctx)
}

// attempt is one try on endpoint idx.
func (k *core) attempt(ctx context.Context, idx int, method string, req, resp any, ok check, opts []grpc.CallOption) outcome {
	cc, err := k.conns.conn(idx)
	if err != nil {
		return outcome{err: err}
	}
	d, _ := ctx.Deadline()
	timeout := max(min(time.Until(d), k.attemptTimeout), time.Millisecond)
	actx, cancel := context.WithTimeout(k.conns.outgoing(ctx), timeout)
	defer cancel()
	var header, trailer metadata.MD
	opts = slices.Concat(opts, []grpc.CallOption{grpc.Header(&header), grpc.Trailer(&trailer)})
	err = cc.Invoke(actx, method, req, resp, opts...)
	if err == nil {
		return k.answered(idx, header, ok)
	}
	if ctx.Err() != nil || !time.Now().Before(d) {
		return outcome{err: statusOf(err, trailer).toError(), cut: true}
	}
	return k.refused(idx, statusOf(err, trailer))
}

// answered: the node answered; a failure inside the answer that another
// node could fix still makes the attempt count as failed.
func (k *core) answered(idx int, header metadata.MD, ok check) outcome {
	leader := k.conns.indexOf(leaderOf(header))
	if leader < 0 {
		leader = idx
	}
	if ok != nil {
		if s, failed := ok(); failed {
			return k.refused(idx, s)
		}
	}
	return outcome{leader: leader}
}

// refused is the outcome of a status: retried or not, and where next.
func (k *core) refused(idx int, s rpcStatus) outcome {
	d := decide(s)
	if d.tls {
		return outcome{err: s.tlsError(k.conns.targets[idx] + ": "), status: s}
	}
	e := s.toError()
	if !d.retry {
		return outcome{err: e, status: s}
	}
	e.Message = k.conns.targets[idx] + ": " + e.Message
	leader := k.conns.indexOf(leaderOf(s.trailer))
	if leader < 0 {
		leader = k.conns.indexOf(s.detail.GetLeaderAddr())
	}
	if leader < 0 {
		leader = (idx + 1) % len(k.conns.targets)
	}
	return outcome{err: e, retry: true, status: s, leader: leader, pushback: pushback(s.trailer)}
}
