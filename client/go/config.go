package handlestore

import (
	"strings"
	"time"
)

// Config is what a Client is made from. Only Endpoints is required.
type Config struct {
	// Endpoints are the nodes' client addresses: "host:port", or
	// "http://host:port" ("https://" with TLS).
	Endpoints []string
	// Namespace is the tenant every call uses ("" = "default").
	Namespace string
	// TLS to the nodes (nil: cleartext).
	TLS *TLS
	// Token is a user's bearer token, for clusters with auth enabled.
	Token string
	// CallTimeout bounds a call across its retries when its context has
	// no deadline (default 15 s). A context's deadline always bounds it.
	CallTimeout time.Duration
	// AttemptTimeout bounds one attempt on one node (default 3 s).
	AttemptTimeout time.Duration
	// Backoff between retries (default 25 ms, capped at 1 s).
	Backoff Backoff
	// MaxWriteCalls is how many calls carrying writes may be in flight at
	// once (default 8): writes issued while all are busy share the next
	// Writes.Submit.
	MaxWriteCalls int
	// MaxReadCalls is the same for point reads and Reads.Submit (default 8).
	MaxReadCalls int
}

// DefaultNamespace is the namespace of a Config that names none.
const DefaultNamespace = "default"

// withDefaults fills what the caller left zero, with proto/wire.txt's
// defaults (wire_gen.go).
func (c Config) withDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = wireCallTimeout
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = wireAttemptTimeout
	}
	if c.Backoff.Base <= 0 {
		c.Backoff.Base = wireBackoffBase
	}
	if c.Backoff.Max <= 0 {
		c.Backoff.Max = wireBackoffMax
	}
	if c.MaxWriteCalls <= 0 {
		c.MaxWriteCalls = wireMaxCalls
	}
	if c.MaxReadCalls <= 0 {
		c.MaxReadCalls = wireMaxCalls
	}
	return c
}

func (c Config) validate() error {
	if err := checkNamespace(c.Namespace); err != nil {
		return err
	}
	if c.Token != "" && strings.ContainsAny(c.Token, "\r\n") {
		return invalid("the token holds characters a header cannot carry")
	}
	return nil
}

func checkNamespace(ns string) error {
	if !isName(ns, maxNameLen) {
		return invalid("namespace %q may only contain A-Z a-z 0-9 _ - . (1-64 bytes)", ns)
	}
	return nil
}

// endpointList splits comma-separated entries and drops empty ones.
func endpointList(endpoints []string) []string {
	var out []string
	for _, e := range endpoints {
		for _, part := range strings.Split(e, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// parseEndpoint is the "host:port" of "host:port" or "http(s)://host:port".
func parseEndpoint(raw string, tls bool) (string, error) {
	scheme, rest, found := strings.Cut(raw, "://")
	if !found {
		rest = raw
		scheme = map[bool]string{true: "https", false: "http"}[tls]
	}
	switch {
	case scheme != "http" && scheme != "https":
		return "", invalid("endpoint %q: scheme %s is not supported (http or https)", raw, scheme)
	case scheme == "https" && !tls:
		return "", invalid("endpoint %q: an https endpoint needs the cluster's CA (Config.TLS)", raw)
	case scheme == "http" && tls:
		return "", invalid("endpoint %q: TLS is configured, so endpoints are https:// (or host:port)", raw)
	}
	host := strings.TrimRight(rest, "/")
	if host == "" || strings.Contains(host, "/") || !strings.Contains(host, ":") {
		return "", invalid("endpoint %q: expected host:port", raw)
	}
	return host, nil
}
