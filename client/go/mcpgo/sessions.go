package mcpgo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/mcpevents"
)

// SessionsPrefix is the default key prefix of the session ids.
const SessionsPrefix = "mcp/session-ids"

// SessionIDPrefix begins every session id a SessionIdManager mints (the
// prefix of mcp-go's own managers).
const SessionIDPrefix = "mcp-session-"

// ErrSessionNotFound is what Validate says of a well-formed session id the
// cluster does not have (never minted, or expired).
var ErrSessionNotFound = errors.New("session not found")

// ErrInvalidSessionID is what Validate and Terminate say of a malformed
// session id, before any call.
var ErrInvalidSessionID = errors.New("invalid session id")

// SessionOptions shape a SessionIdManager.
type SessionOptions struct {
	// Prefix of the keys (default mcp/session-ids).
	Prefix string
	// TTL is how long a session lives after its last use (default an
	// hour, at least a second): Validate pushes its expiry back, with a
	// write only when less than the TTL is left (a write sets it 1.25×
	// the TTL away). A terminated session is remembered as terminated
	// for the TTL.
	TTL time.Duration
}

// SessionIdManager is mcp-go's server.SessionIdManager (and its
// SessionIdManagerResolver) on the cluster: a session id minted on one
// replica validates on every replica, and once terminated on one is
// terminated on all. Pass it to server.WithSessionIdManagerResolver: the
// calls then end with their request, and a replica's own housekeeping
// (its idle sweeper, Shutdown) ends no session (see
// ResolveSessionIdManager). With server.WithSessionIdManager those
// terminate, on every replica, the sessions the replica let go of.
//
// A session is one state key, mcp/session-ids/<digest of the id>, its value
// {"state": "live"} or {"state": "terminated"}, replicated and fsynced on
// a majority. An id is "mcp-session-" and 128 random bits in base32; a
// malformed one is refused before any call. Generate is a create-only
// write; Validate a linearizable read (and, when the expiry is due to be
// pushed back, a compare-and-set write); Terminate a write.
//
// mcp-go's interface gives these calls no context and Generate no error:
// they run under the request's context with the resolver (else with none,
// bounded by the client's CallTimeout), and an id Generate could not
// record is returned anyway: it does not validate, so the client's next
// request gets 404 and the client starts a new session.
type SessionIdManager struct {
	tool   *handlestore.StateTool
	prefix string
	ttl    time.Duration
	ctx    context.Context
	// local: resolved for housekeeping (no request): Terminate is a no-op.
	local bool
}

var (
	_ server.SessionIdManager         = (*SessionIdManager)(nil)
	_ server.SessionIdManagerResolver = (*SessionIdManager)(nil)
)

// NewSessionIdManager is the manager in c's namespace.
func NewSessionIdManager(c *handlestore.Client, opts SessionOptions) (*SessionIdManager, error) {
	if opts.Prefix == "" {
		opts.Prefix = SessionsPrefix
	}
	opts.Prefix = strings.TrimSuffix(opts.Prefix, "/")
	if err := handlestore.CheckKey(opts.Prefix + "/x"); err != nil {
		return nil, err
	}
	if opts.TTL <= 0 {
		opts.TTL = time.Hour
	}
	return &SessionIdManager{
		tool: c.StateTool(handlestore.StateToolOptions{}), prefix: opts.Prefix,
		ttl: max(opts.TTL, time.Second), ctx: context.Background(),
	}, nil
}

// ResolveSessionIdManager implements server.SessionIdManagerResolver: the
// manager whose calls end with r's context. mcp-go resolves with a nil r
// only for a replica's own housekeeping, its idle sweeper
// (WithSessionIdleTTL) and CloseSessions (Shutdown): the manager it gets
// then terminates nothing, since a replica that stops or forgets a
// session must not end it for the replicas still serving it; a session
// ends with a DELETE, on any replica, or with its TTL.
func (m *SessionIdManager) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	view := *m
	if r == nil {
		view.local = true
	} else {
		view.ctx = r.Context()
	}
	return &view
}

type sessionValue struct {
	State string `json:"state"`
}

const (
	stateLive       = "live"
	stateTerminated = "terminated"
)

func (m *SessionIdManager) key(id string) string {
	return m.prefix + "/" + mcpevents.Digest(id)
}

// CheckSessionID says why id is not a session id a SessionIdManager
// mints (nil if it is one).
func CheckSessionID(id string) error {
	random, ok := strings.CutPrefix(id, SessionIDPrefix)
	if !ok || handlestore.CheckHandleID(random) != nil || strings.Contains(random, "-") {
		return fmt.Errorf("%w: %s", ErrInvalidSessionID, mcpevents.Shown(id))
	}
	return nil
}

func (m *SessionIdManager) store(id, state string, ttl time.Duration, cond handlestore.Condition) error {
	_, err := m.tool.Store(m.ctx, m.key(id), sessionValue{State: state}, handlestore.TTL(ttl), cond)
	return err
}

// Generate implements server.SessionIdManager: a new id, recorded as live
// on every replica.
func (m *SessionIdManager) Generate() string {
	id := handlestore.NewHandleID(strings.TrimSuffix(SessionIDPrefix, "-"))
	_ = m.store(id, stateLive, m.ttl*5/4, handlestore.IfRevision(0))
	return id
}

// Live says whether the cluster has the session and it is not terminated
// (false for a malformed id, without a call).
func (m *SessionIdManager) Live(ctx context.Context, sessionID string) (bool, error) {
	view := *m
	view.ctx = ctx
	terminated, err := view.validate(sessionID, false)
	switch {
	case errors.Is(err, ErrInvalidSessionID), errors.Is(err, ErrSessionNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return !terminated, nil
}

// Validate implements server.SessionIdManager: (false, nil) for a live
// session, (true, nil) for a terminated one, ErrInvalidSessionID for a
// malformed id (before any call), ErrSessionNotFound for one the cluster
// does not have, and the cluster's error if it cannot say.
func (m *SessionIdManager) Validate(sessionID string) (isTerminated bool, err error) {
	return m.validate(sessionID, true)
}

// validate is Validate, pushing a live session's expiry back if refresh.
func (m *SessionIdManager) validate(sessionID string, refresh bool) (isTerminated bool, err error) {
	if err := CheckSessionID(sessionID); err != nil {
		return false, err
	}
	e, err := m.tool.Retrieve(m.ctx, m.key(sessionID))
	if err != nil {
		return false, fmt.Errorf("session %s: %w", sessionID, err)
	}
	if e == nil {
		return false, fmt.Errorf("%w: %s", ErrSessionNotFound, sessionID)
	}
	var v sessionValue
	if err := e.Value.Decode(&v); err != nil {
		return false, fmt.Errorf("session %s: %w", sessionID, err)
	}
	switch v.State {
	case stateTerminated:
		return true, nil
	case stateLive:
	default:
		return false, fmt.Errorf("session %s: unreadable state %q: %w", sessionID, v.State, handlestore.ErrCodec)
	}
	// Push the expiry back once less than the TTL is left (unless another
	// replica wrote in between: it pushed it back, or terminated it).
	if refresh && !e.ExpiresAt.IsZero() && time.Until(e.ExpiresAt) < m.ttl {
		_ = m.store(sessionID, stateLive, m.ttl*5/4, handlestore.IfRevision(e.ModRevision))
	}
	return false, nil
}

// Terminate implements server.SessionIdManager: the session is terminated
// on every replica (any well-formed id may be terminated, as mcp-go's own
// managers allow; termination is never refused by policy). Resolved
// without a request, it does nothing (see ResolveSessionIdManager).
func (m *SessionIdManager) Terminate(sessionID string) (isNotAllowed bool, err error) {
	if err := CheckSessionID(sessionID); err != nil {
		return false, err
	}
	if m.local {
		return false, nil
	}
	if err := m.store(sessionID, stateTerminated, m.ttl, handlestore.Condition{}); err != nil {
		return false, fmt.Errorf("session %s: %w", sessionID, err)
	}
	return false, nil
}
