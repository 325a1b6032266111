package handlestore

// Client is a connection to a handlestore cluster, safe for concurrent
// use. Nodes are dialed lazily, so New succeeds while nodes are down; it
// fails only on a malformed Config. Every call takes a context: its
// deadline (else Config.CallTimeout) bounds the call across retries and
// failover, and cancelling it ends the call.
type Client struct {
	core      *core
	namespace string
	ids       *writeIDs
}

// New makes a client of the cluster cfg names.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	raw := endpointList(cfg.Endpoints)
	if len(raw) == 0 {
		return nil, invalid("no endpoints given")
	}
	targets := make([]string, len(raw))
	for i, e := range raw {
		t, err := parseEndpoint(e, cfg.TLS != nil)
		if err != nil {
			return nil, err
		}
		targets[i] = t
	}
	cs, err := newConns(targets, cfg.TLS, cfg.Token)
	if err != nil {
		return nil, err
	}
	k := &core{conns: cs, callTimeout: cfg.CallTimeout, attemptTimeout: cfg.AttemptTimeout, backoff: cfg.Backoff}
	k.writes = newWriteCoalescer(k, cfg.MaxWriteCalls)
	k.reads = newReadCoalescer(k, cfg.MaxReadCalls)
	return &Client{core: k, namespace: cfg.Namespace, ids: newWriteIDs()}, nil
}

// Close closes the connections, of this client and of its clones.
func (c *Client) Close() error {
	return c.core.conns.close()
}

// Namespace is the namespace every call of this client uses.
func (c *Client) Namespace() string { return c.namespace }

// Endpoints are the nodes' addresses, as "host:port".
func (c *Client) Endpoints() []string {
	return append([]string(nil), c.core.conns.targets...)
}

// Preferred is the endpoint calls go to first: the leader, once known.
func (c *Client) Preferred() string {
	return c.core.conns.targets[c.core.conns.preferredIndex()]
}

// ClientID is the random id this client's writes are deduplicated under.
func (c *Client) ClientID() uint64 { return c.ids.clientID }

// WriteStats counts the writes sent and the calls that carried them (of
// this client and its clones).
func (c *Client) WriteStats() CallStats { return c.core.writes.stats() }

// ReadStats counts the point reads sent and the calls that carried them.
func (c *Client) ReadStats() CallStats { return c.core.reads.stats() }

// WithNamespace is a client of another namespace sharing this one's
// connections and calls, with its own write ids.
func (c *Client) WithNamespace(ns string) (*Client, error) {
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	return &Client{core: c.core, namespace: ns, ids: newWriteIDs()}, nil
}
