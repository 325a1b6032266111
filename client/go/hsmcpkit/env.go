package hsmcpkit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// NewHandleStoreFromEnv is mcpkit's server.NewHandleStore on the cluster
// the environment names (handlestore.FromEnv: HANDLESTORE_ENDPOINTS,
// HANDLESTORE_NAMESPACE, TLS and token), as the handle store named store,
// with mcpkit's options:
//
//	carts := hsmcpkit.NewHandleStoreFromEnv[Cart]("cart", hsmcpkit.WithHandleIDPrefix("cart"), hsmcpkit.WithHandleDefaultTTL(time.Hour))
//
// Like mcpkit's constructor it returns the store alone: it panics where
// NewFromEnv gives an error (no endpoints, unreadable certificates, a bad
// name), at start-up, before any tool call. The stores made from one
// environment share one client, kept for the life of the process (as
// http.DefaultClient is), so Close releases nothing a later call needs.
func NewHandleStoreFromEnv[T any](store string, opts ...HandleStoreOption) *HandleStore[T] {
	s, err := NewFromEnv[T](store, opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// NewFromEnv is NewHandleStoreFromEnv with the error instead of a panic.
func NewFromEnv[T any](store string, opts ...HandleStoreOption) (*HandleStore[T], error) {
	c, err := envClient()
	if err != nil {
		return nil, err
	}
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	return New[T](c, store, o)
}

// envClients are the clients made from the environment, by the
// HANDLESTORE_ variables they were made from.
var envClients struct {
	sync.Mutex
	byEnv map[string]*handlestore.Client
}

// envClient is the client of the environment as it is now.
func envClient() (*handlestore.Client, error) {
	key := envKey()
	envClients.Lock()
	defer envClients.Unlock()
	if c, ok := envClients.byEnv[key]; ok {
		return c, nil
	}
	cfg, err := handlestore.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("hsmcpkit: the cluster from the environment: %w", err)
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("hsmcpkit: HANDLESTORE_ENDPOINTS is not set: it names the cluster's nodes (host:port, comma-separated)")
	}
	c, err := handlestore.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("hsmcpkit: the cluster from the environment: %w", err)
	}
	if envClients.byEnv == nil {
		envClients.byEnv = map[string]*handlestore.Client{}
	}
	envClients.byEnv[key] = c
	return c, nil
}

// envKey is the HANDLESTORE_ variables, sorted: the environment a client
// was made from.
func envKey() string {
	var vars []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HANDLESTORE_") {
			vars = append(vars, kv)
		}
	}
	slices.Sort(vars)
	return strings.Join(vars, "\x00")
}
