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
	"fmt"
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
}

var _ server.EventStore = (*EventStore)(nil)

// NewEventStore is the store in c's namespace.
func NewEventStore(c *handlestore.Client, opts EventStoreOptions) (*EventStore, error) {
	if err := mcpevents.CheckPrefix(opts.Prefix); err != nil {
		return nil, err
	}
	log := mcpevents.New(c, mcpevents.Options{Prefix: opts.Prefix, TTL: opts.TTL, MaxEvents: opts.MaxEvents})
	return &EventStore{log: log, sessions: opts.Sessions}, nil
}

// StoreEvent implements server.EventStore: message is stored as the next
// event of the stream, and its id returned.
func (s *EventStore) StoreEvent(ctx context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	head, err := s.log.Append(ctx, sessionID, streamID, message)
	if err != nil {
		return "", err
	}
	return mcpevents.FormatEventID(head.Token, head.Seq), nil
}

// ReplayEventsAfter implements server.EventStore: it sends the stored
// events of lastEventID's stream after it, in order, and returns the
// stream's id. An id this store did not mint is server.ErrUnknownEventID
// before any call; one of another session, or of a stream the cluster no
// longer has (purged, expired), is server.ErrUnknownEventID too. An error
// from send ends the replay with it.
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
	evs, err := s.log.After(ctx, token, seq)
	if err != nil {
		return "", err
	}
	for _, e := range evs {
		if e.Data == nil {
			continue // a priming event (another SDK's): nothing to send
		}
		if err := send(mcpevents.FormatEventID(token, e.Seq), e.Data); err != nil {
			return "", err
		}
	}
	return stream, nil
}

// PurgeSession implements server.EventStore: it deletes the session's
// streams on every replica, so none of its event ids resumes anywhere;
// with EventStoreOptions.Sessions, only once the session is terminated
// (or gone).
func (s *EventStore) PurgeSession(ctx context.Context, sessionID string) error {
	if s.sessions != nil {
		live, err := s.sessions.Live(ctx, sessionID)
		if err != nil || live {
			return err
		}
	}
	return s.log.PurgeSession(ctx, sessionID)
}
