package handlestore

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// highWater is how many unread responses a watch stream buffers before it
// stops reading (the node then holds the rest, within its bounds).
const highWater = 64

// streamReader reads a watch stream in a goroutine of its own, so that a
// read can give up after a silence; cancel ends the goroutine.
type streamReader struct {
	msgs    chan *pb.WatchResponse
	done    chan struct{}
	err     error
	trailer metadata.MD
	cancel  context.CancelFunc
}

// got is what a read found.
type got int

const (
	gotMessage got = iota
	gotEnd         // the node ended the stream
	gotSilence     // nothing came in time
	gotFailure     // the stream failed: see err
)

func newStreamReader(ctx context.Context, cancel context.CancelFunc, stream grpc.ServerStreamingClient[pb.WatchResponse]) *streamReader {
	r := &streamReader{msgs: make(chan *pb.WatchResponse, highWater), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(r.done)
		for {
			m, err := stream.Recv()
			if err != nil {
				r.err, r.trailer = err, stream.Trailer()
				return
			}
			select {
			case r.msgs <- m:
			case <-ctx.Done():
				r.err = ctx.Err()
				return
			}
		}
	}()
	return r
}

// read is the next response, or why there is none: the stream ended,
// failed, or stayed silent for `silence`. The caller's ctx ending, or
// stop closing, gives up at once.
func (r *streamReader) read(ctx context.Context, stop <-chan struct{}, silence time.Duration) (*pb.WatchResponse, got, error) {
	select {
	case m := <-r.msgs:
		return m, gotMessage, nil
	default:
	}
	t := time.NewTimer(silence)
	defer t.Stop()
	select {
	case m := <-r.msgs:
		return m, gotMessage, nil
	case <-r.done:
		return r.drained()
	case <-t.C:
		return nil, gotSilence, nil
	case <-ctx.Done():
		return nil, gotFailure, ctx.Err()
	case <-stop:
		return nil, gotFailure, ErrClosed
	}
}

// drained: the stream is over; what it still had, then how it ended.
func (r *streamReader) drained() (*pb.WatchResponse, got, error) {
	select {
	case m := <-r.msgs:
		return m, gotMessage, nil
	default:
	}
	if errors.Is(r.err, io.EOF) {
		return nil, gotEnd, nil
	}
	return nil, gotFailure, r.err
}

func (r *streamReader) close() {
	r.cancel()
}
