package handlestore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A coalescer shares calls among concurrent requests of one client: the
// seam under writes.go (writes share Writes.Submit) and reads.go (point
// reads share Reads.Submit), as the other clients' coalesce.
//
// At most maxCalls calls are in flight. A request that finds a call free
// is sent at once, alone: a lone caller waits for nothing. A request that
// finds them all busy waits in a queue, and when a call ends, what queued
// by then leaves together in the next one, up to the bounds. Each request
// still gets its own answer or error; a call that fails as a whole fails
// each of its requests. A request whose caller gave up while it waited is
// never sent.
type coalescer[I, R any] struct {
	submit  func(ctx context.Context, items []I) ([]result[R], error)
	what    string
	bounds  bounds
	timeout time.Duration
	discard func(I)

	mu       sync.Mutex
	waiting  []*waiter[I, R]
	inFlight int

	sent, calls atomic.Int64
}

type bounds struct {
	maxCalls, maxItems, maxBytes int
}

// result is one request's answer or error.
type result[R any] struct {
	val R
	err error
}

type waiter[I, R any] struct {
	item I
	size int
	done chan result[R]
}

// CallStats counts requests sent and the calls that carried them.
type CallStats struct {
	Sent, Calls int64
}

func (c *coalescer[I, R]) stats() CallStats {
	return CallStats{Sent: c.sent.Load(), Calls: c.calls.Load()}
}

// run sends item, alone or with others, and gives its answer.
func (c *coalescer[I, R]) run(ctx context.Context, item I, size int) (R, error) {
	c.mu.Lock()
	if c.inFlight < c.bounds.maxCalls && len(c.waiting) == 0 {
		c.inFlight++
		c.mu.Unlock()
		defer c.release()
		results, err := c.call(ctx, []I{item})
		if err != nil {
			var zero R
			return zero, err
		}
		return results[0].val, results[0].err
	}
	w := &waiter[I, R]{item: item, size: size, done: make(chan result[R], 1)}
	c.waiting = append(c.waiting, w)
	if c.inFlight < c.bounds.maxCalls {
		c.inFlight++
		go c.drain()
	}
	c.mu.Unlock()
	return c.await(ctx, w)
}

// await waits for a queued request's answer, or for its caller to give up.
func (c *coalescer[I, R]) await(ctx context.Context, w *waiter[I, R]) (R, error) {
	start := time.Now()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	select {
	case r := <-w.done:
		return r.val, r.err
	case <-ctx.Done():
		where := fmt.Sprintf("the shared %s call carrying it did not answer", c.what)
		if c.remove(w) {
			c.discard(w.item)
			where = fmt.Sprintf("waiting for a free call (every %s call of this client is busy)", c.what)
		}
		var zero R
		return zero, ended(ctx, time.Since(start), errors.New(where))
	}
}

// remove takes w off the queue; false if it was already sent.
func (c *coalescer[I, R]) remove(w *waiter[I, R]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.waiting {
		if q == w {
			c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// release: a lone call ended; its slot drains what queued meanwhile, or
// is freed.
func (c *coalescer[I, R]) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) > 0 {
		go c.drain()
		return
	}
	c.inFlight--
}

// drain sends what is queued, call after call, on the slot it was given.
func (c *coalescer[I, R]) drain() {
	for {
		c.mu.Lock()
		batch := c.take()
		if len(batch) == 0 {
			c.inFlight--
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.send(batch)
	}
}

// take is the next call's requests, in order, up to the bounds (at least
// one). Called with mu held.
func (c *coalescer[I, R]) take() []*waiter[I, R] {
	var batch []*waiter[I, R]
	bytes := 0
	for len(c.waiting) > 0 {
		next := c.waiting[0]
		full := len(batch) >= c.bounds.maxItems || bytes+next.size > c.bounds.maxBytes
		if len(batch) > 0 && full {
			break
		}
		c.waiting = c.waiting[1:]
		bytes += next.size
		batch = append(batch, next)
	}
	return batch
}

func (c *coalescer[I, R]) send(batch []*waiter[I, R]) {
	items := make([]I, len(batch))
	for i, w := range batch {
		items[i] = w.item
	}
	results, err := c.call(context.Background(), items)
	for i, w := range batch {
		if err != nil {
			w.done <- result[R]{err: err}
		} else {
			w.done <- results[i]
		}
	}
}

func (c *coalescer[I, R]) call(ctx context.Context, items []I) ([]result[R], error) {
	c.sent.Add(int64(len(items)))
	c.calls.Add(1)
	results, err := c.submit(ctx, items)
	if err == nil && len(results) != len(items) {
		return nil, fmt.Errorf("handlestore: the node answered %d results for %d requests", len(results), len(items))
	}
	return results, err
}
