package handlestore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
)

// maxMessage is the largest gRPC message sent or accepted (values are
// limited by the node).
const maxMessage = 64 << 20

// conns is what a client and its namespace clones share: one gRPC
// connection per endpoint, dialed on first use, the endpoint believed to
// lead, and the credentials every call carries.
type conns struct {
	targets []string
	creds   credentials.TransportCredentials
	token   string
	// preferred is the endpoint calls go to first (the leader, once known).
	preferred atomic.Int64
	// watches opened, to spread them over the followers.
	watches atomic.Int64

	mu     sync.Mutex
	open   []*grpc.ClientConn
	closed bool
}

func newConns(targets []string, t *TLS, token string) (*conns, error) {
	creds := insecure.NewCredentials()
	if t != nil {
		cfg, err := t.config()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(cfg)
	}
	return &conns{targets: targets, creds: creds, token: token, open: make([]*grpc.ClientConn, len(targets))}, nil
}

func (c *conns) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(c.creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
		// A node that stops answering is noticed without calls in flight.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second}),
		// A restarted node is dialed again soon (the default waits up to two minutes).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: wireConnectTimeout,
		}),
		// The client retries itself, with write ids; grpc-go's own retries stay off.
		grpc.WithDisableRetry(),
	}
}

// conn is the connection to endpoint i, made now if it is not yet.
func (c *conns) conn(i int) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.open[i] != nil {
		return c.open[i], nil
	}
	cc, err := grpc.NewClient("passthrough:///"+c.targets[i], c.dialOptions()...)
	if err != nil {
		return nil, invalid("endpoint %q: %v", c.targets[i], err)
	}
	c.open[i] = cc
	return cc, nil
}

// outgoing is ctx with the credentials of a call.
func (c *conns) outgoing(ctx context.Context) context.Context {
	if c.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
}

// indexOf is the endpoint with this "host:port", or -1.
func (c *conns) indexOf(addr string) int {
	if addr == "" {
		return -1
	}
	for i, t := range c.targets {
		if t == addr {
			return i
		}
	}
	return -1
}

func (c *conns) preferredIndex() int {
	return int(c.preferred.Load()) % len(c.targets)
}

func (c *conns) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var first error
	for i, cc := range c.open {
		if cc != nil {
			if err := cc.Close(); err != nil && first == nil {
				first = err
			}
			c.open[i] = nil
		}
	}
	return first
}
