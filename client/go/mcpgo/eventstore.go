// Package mcpgo has the seams of mark3labs/mcp-go (v1.2) on a handlestore
// cluster, so any replica of a Streamable HTTP server serves any request
// of a session:
//
//   - EventStore, mcp-go's server.EventStore: a stream cut off one
//     replica resumes on any other with Last-Event-ID;
//   - SessionIdManager, mcp-go's server.SessionIdManager: a session id
//     minted on one replica validates, and terminates, on every replica;
//   - TokenStore, the client's transport.TokenStore: OAuth tokens kept
//     encrypted with the cluster's key ring, shared by every instance of a
//     client (and with the Python and TypeScript clients' stores).
//
// It is a module of its own, so the client module's users do not pull
// mcp-go.
package mcpgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/mcpevents"
)

// EventsPrefix is the default key prefix, the one the Rust, Python and
// TypeScript event stores use.
const EventsPrefix = mcpevents.Prefix

// EventStoreOptions shape an EventStore.
type EventStoreOptions struct {
	// Prefix of the keys (default mcp/events).
	Prefix string
	// TTL of every event (default an hour, at least a second).
	TTL time.Duration
	// MaxEvents is how many of a stream's latest events are kept (default
	// 1000, at least 100); older ones go a hundred at a time.
	MaxEvents int
	// Sessions, the servers' SessionIdManager, makes PurgeSession keep the
	// events of a session the cluster still has live: mcp-go purges a
	// session's events when it ends (DELETE), but also when a replica's
	// idle sweeper forgets it or the replica shuts down, while other
	// replicas go on serving it. Nil: every PurgeSession purges.
	Sessions *SessionIdManager
}

// EventStore is mcp-go's server.EventStore on the cluster: every event the
// server sends on a resumable stream is committed (replicated and fsynced
// on a majority) before its id goes out, so a client that resumes with
// Last-Event-ID on any replica gets exactly the events of that stream after
// it, in order, with their original ids. Pass it to
// server.WithEventStore; one store serves every session of a process.
//
// The keys and event ids are those of the Rust, Python and TypeScript
// event stores: an id is "<token>.<seq>", the token 128 random bits drawn
// with the stream's first event (unguessable), the sequence number taken
// by one atomic batch that moves the stream's head by compare-and-set and
// writes the event (unique across replicas). A session's streams are
// scoped to it, as the TypeScript store's scoped(sessionId): an event id
// of one session replays nothing in another.
type EventStore struct {
	log      *mcpevents.Log
	sessions *SessionIdManager

	mu sync.Mutex
	// bare: by session, the streams appended outside a POST seen by Resume
	// (the session's listening stream), released when mcp-go lets the
	// session go here.
	bare map[string]map[string]bool
}

var _ server.EventStore = (*EventStore)(nil)

// NewEventStore is the store in c's namespace.
func NewEventStore(c *handlestore.Client, opts EventStoreOptions) (*EventStore, error) {
	if err := mcpevents.CheckPrefix(opts.Prefix); err != nil {
		return nil, err
	}
	log := mcpevents.New(c, mcpevents.Options{Prefix: opts.Prefix, TTL: opts.TTL, MaxEvents: opts.MaxEvents})
	return &EventStore{log: log, sessions: opts.Sessions, bare: map[string]map[string]bool{}}, nil
}

// StoreEvent implements server.EventStore: message is stored as the next
// event of the stream, and its id returned. The stream's first event
// writes its liveness record, naming the request of the POST that opened
// it (seen by Resume), kept until the stream's response is stored, the
// POST ends or mcp-go lets the session go here.
func (s *EventStore) StoreEvent(ctx context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	live := &mcpevents.Live{}
	if p := postOf(ctx); p != nil && p.opened(sessionID, streamID) {
		live.Requests = p.ids
	} else {
		s.noteBare(sessionID, streamID)
	}
	head, err := s.log.Append(ctx, sessionID, streamID, message, live)
	if err != nil {
		return "", err
	}
	return mcpevents.FormatEventID(head.Token, head.Seq), nil
}

func (s *EventStore) noteBare(sessionID, streamID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bare[sessionID] == nil {
		s.bare[sessionID] = map[string]bool{}
	}
	s.bare[sessionID][streamID] = true
}

// releaseBare stops keeping alive the session's streams that no POST
// owns: mcp-go stopped the session's pump here.
func (s *EventStore) releaseBare(ctx context.Context, sessionID string) error {
	s.mu.Lock()
	streams := s.bare[sessionID]
	delete(s.bare, sessionID)
	s.mu.Unlock()
	var errs []error
	for stream := range streams {
		errs = append(errs, s.log.Release(ctx, sessionID, stream))
	}
	return errors.Join(errs...)
}

// ReplayEventsAfter implements server.EventStore: it sends the stored
// events of lastEventID's stream after it, in order, and returns the
// stream's id. An id this store did not mint is server.ErrUnknownEventID
// before any call; one of another session, or of a stream the cluster no
// longer has (purged, expired), is server.ErrUnknownEventID too. An error
// from send ends the replay with it.
//
// In a resumption served through Resume, of a stream another process
// runs, it then follows the stream (see Resume) and returns once the
// stream is complete, the client went, or the stream's origin went
// without an answer that can be made for it.
func (s *EventStore) ReplayEventsAfter(ctx context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	token, seq, ok := mcpevents.ParseEventID(lastEventID)
	if !ok {
		return "", fmt.Errorf("%w: malformed event id %s", server.ErrUnknownEventID, mcpevents.Shown(lastEventID))
	}
	stream, ok, err := s.log.StreamOf(ctx, token)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: %s", server.ErrUnknownEventID, lastEventID)
	}
	// The stream's head in this session names the token only if the stream
	// is this session's.
	head, ok, err := s.log.Head(ctx, sessionID, stream)
	if err != nil {
		return "", err
	}
	if !ok || head.Token != token || seq > head.Seq {
		return "", fmt.Errorf("%w: %s", server.ErrUnknownEventID, lastEventID)
	}
	sendEvent := func(e mcpevents.Event) error {
		return send(mcpevents.FormatEventID(token, e.Seq), e.Data)
	}
	// mcp-go serves a stream its process runs itself (it holds it), and
	// looks a stream up before it writes the response's header: replay.
	rw := resumingOf(ctx)
	if rw == nil || !rw.isStarted() || s.log.IsOrigin(sessionID, stream) {
		return stream, s.replay(ctx, token, seq, sendEvent)
	}
	f, err := s.log.Follow(ctx, sessionID, stream, token, seq)
	if err != nil {
		return "", err
	}
	if err := f.Run(ctx, sendEvent, rw.keepalive); err != nil && ctx.Err() == nil {
		return "", err
	}
	return stream, nil
}

// replay sends the stored events of the stream with token after seq.
func (s *EventStore) replay(ctx context.Context, token string, seq uint64, send func(mcpevents.Event) error) error {
	evs, err := s.log.After(ctx, token, seq)
	if err != nil {
		return err
	}
	for _, e := range evs {
		if e.Data == nil {
			continue // a priming event (another SDK's): nothing to send
		}
		if err := send(e); err != nil {
			return err
		}
	}
	return nil
}

// PurgeSession implements server.EventStore: it deletes the session's
// streams on every replica, so none of its event ids resumes anywhere;
// with EventStoreOptions.Sessions, only once the session is terminated
// (or gone). Either way mcp-go let the session go on this replica, which
// stops keeping alive the streams of it no POST owns (its listening
// stream): a follower of one answers for it.
func (s *EventStore) PurgeSession(ctx context.Context, sessionID string) error {
	released := s.releaseBare(ctx, sessionID)
	if s.sessions != nil {
		live, err := s.sessions.Live(ctx, sessionID)
		if err != nil || live {
			return errors.Join(released, err)
		}
	}
	return errors.Join(released, s.log.PurgeSession(ctx, sessionID))
}
