package handlestore

import (
	"cmp"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// stream is a stream of Conn: until its first answer it is opened again on
// another node, as invoke retries a call, and what was sent on it is sent
// again (the shape of etcd's serverStreamingRetryingStream); after it, it
// is the node's stream as it is.
type stream struct {
	k      *core
	ctx    context.Context // the caller's, with the credentials
	desc   *grpc.StreamDesc
	method string
	opts   []grpc.CallOption
	// opening bounds the wait for the first answer (ctx's deadline, else
	// CallTimeout); its end cancels an attempt that has not answered.
	opening context.Context
	done    context.CancelFunc
	budget  time.Duration

	mu         sync.Mutex
	cur        grpc.ClientStream
	cancel     context.CancelFunc
	idx        int
	sent       []any
	closedSend bool
	answered   bool
	tries      int
	last       error
}

// openStream opens a stream on the preferred node, or where refusals lead.
func (k *core) openStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts []grpc.CallOption) (grpc.ClientStream, error) {
	ctx = k.conns.outgoing(ctx)
	opening, done, budget := k.bound(ctx)
	s := &stream{k: k, ctx: ctx, desc: desc, method: method, opts: opts, opening: opening, done: done, budget: budget, idx: k.conns.preferredIndex()}
	context.AfterFunc(opening, s.cutUnanswered)
	if err := s.connect(); err != nil {
		done()
		return nil, err
	}
	return s, nil
}

// cutUnanswered cancels the attempt once the opening ends without an answer.
func (s *stream) cutUnanswered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.answered && s.cancel != nil {
		s.cancel()
	}
}

// connect opens the stream on s.idx, moving on after refusals.
func (s *stream) connect() error {
	for {
		err := s.attempt()
		if err == nil {
			return nil
		}
		if err := s.failed(err, nil); err != nil {
			return err
		}
	}
}

// attempt opens the stream on s.idx and sends what was sent before.
func (s *stream) attempt() error {
	cc, err := s.k.conns.conn(s.idx)
	if err != nil {
		return err
	}
	ctx, err := s.fresh()
	if err != nil {
		return err
	}
	cur, err := cc.NewStream(ctx, s.desc, s.method, s.opts...)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = cur
	for _, m := range s.sent {
		if err := cur.SendMsg(m); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	if s.closedSend {
		return cur.CloseSend()
	}
	return nil
}

// fresh ends the last attempt and gives the next one its context, which
// the opening's end cancels while there is no answer.
func (s *stream) fresh() (context.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
	if err := s.opening.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.cancel = cancel
	return ctx, nil
}

// failed decides after a failure before the first answer: nil to try again
// (on the node it names, after a pause), else the call's error.
func (s *stream) failed(err error, trailer metadata.MD) error {
	var e *Error
	if errors.As(err, &e) || errors.Is(err, ErrClosed) {
		return err
	}
	if s.opening.Err() != nil {
		var now error = statusOf(err, trailer).toError()
		return ended(s.opening, s.budget, cmp.Or(s.last, now))
	}
	o := s.k.refused(s.idx, statusOf(err, trailer))
	if !o.retry {
		return o.err
	}
	s.last, s.idx = o.err, o.leader
	s.k.conns.preferred.Store(int64(o.leader))
	wait := max(s.k.backoff.wait(s.tries), o.pushback)
	s.tries++
	return s.k.pause(s.opening, wait, s.budget, o.err)
}

func (s *stream) current() grpc.ClientStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *stream) hasAnswered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answered
}

// answer: the first message came; the stream is the node's from now on.
func (s *stream) answer(cur grpc.ClientStream) {
	s.mu.Lock()
	s.answered, s.sent = true, nil
	s.mu.Unlock()
	s.done()
	header, _ := cur.Header()
	s.k.conns.preferred.Store(int64(s.k.answered(s.idx, header, nil).leader))
}

func (s *stream) RecvMsg(m any) error {
	for {
		cur := s.current()
		err := cur.RecvMsg(m)
		switch {
		case err == nil:
			if !s.hasAnswered() {
				s.answer(cur)
			}
			return nil
		case s.hasAnswered() || errors.Is(err, io.EOF):
			return s.end(s.final(err, cur))
		}
		if err := s.failed(err, cur.Trailer()); err != nil {
			return s.end(err)
		}
		if err := s.connect(); err != nil {
			return s.end(err)
		}
	}
}

// end releases the stream's contexts and gives err.
func (s *stream) end(err error) error {
	s.done()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
	return err
}

// final is the error of a stream that ended after its first answer, as a
// call's: io.EOF for its end, the context's if it ended (a *DeadlineError
// past its deadline), else the node's status as an *Error.
func (s *stream) final(err error, cur grpc.ClientStream) error {
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	var e error = statusOf(err, cur.Trailer()).toError()
	if s.ctx.Err() != nil {
		return ended(s.ctx, s.budget, e)
	}
	return e
}

// SendMsg sends m, keeping a copy to send again until the first answer
// (the caller may change m once SendMsg returns).
func (s *stream) SendMsg(m any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.answered {
		if p, ok := m.(proto.Message); ok {
			s.sent = append(s.sent, proto.Clone(p))
		} else {
			s.sent = append(s.sent, m)
		}
	}
	err := s.cur.SendMsg(m)
	if errors.Is(err, io.EOF) && !s.answered {
		// The node ended the stream: RecvMsg says why, and opens it again.
		return nil
	}
	return err
}

func (s *stream) CloseSend() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closedSend = true
	return s.cur.CloseSend()
}

func (s *stream) Header() (metadata.MD, error) { return s.current().Header() }
func (s *stream) Trailer() metadata.MD         { return s.current().Trailer() }
func (s *stream) Context() context.Context     { return s.current().Context() }
