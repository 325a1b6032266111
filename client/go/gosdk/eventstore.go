// Package gosdk has the seams of the official Go MCP SDK
// (github.com/modelcontextprotocol/go-sdk, v1.8) on a handlestore
// cluster: EventStore, the SDK's mcp.EventStore, so a Streamable HTTP
// stream cut off one replica resumes on any other with Last-Event-ID, and
// Resume, the handler around the SDK's that keeps the result of a call
// whose client went away and serves a resumption on a replica that does
// not hold the stream, following the replica that runs it
// (docs/dev/resume.md).
//
// It is a module of its own, so the client module's users do not pull the
// SDK.
package gosdk

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/mcpevents"
)

// EventsPrefix is the default key prefix, the one the Rust, Python and
// TypeScript event stores use.
const EventsPrefix = mcpevents.Prefix

// ErrUnknownStream is what After yields for a stream the cluster does not
// have (never stored, expired, or its session closed). The SDK answers the
// GET with 400.
var ErrUnknownStream = errors.New("gosdk: unknown event stream")

// EventStoreOptions shape an EventStore.
type EventStoreOptions struct {
	// Prefix of the keys (default mcp/events).
	Prefix string
	// TTL of every event (default an hour, at least a second).
	TTL time.Duration
	// MaxEvents is how many of a stream's latest events are kept (default
	// 1000, at least 100); older ones go a hundred at a time.
	MaxEvents int
	// KeepOnSessionClosed makes SessionClosed a no-op: for servers that
	// close a session after every request while its client goes on using
	// it (a stateless handler with MCPGODEBUG=allowsessionsinstateless=1).
	// The TTL removes the events.
	KeepOnSessionClosed bool
}

// EventStore is the SDK's mcp.EventStore on the cluster: every event the
// SDK sends on a stream is committed (replicated and fsynced on a
// majority) before the SDK writes it, so a client that resumes with
// Last-Event-ID on any replica gets exactly the events after it, in order.
// Pass it as StreamableHTTPOptions.EventStore; one store serves every
// session of a process.
//
// The SDK names events itself ("<stream id>_<index>", the index counted
// from 0 in each session's stream), so the store keeps each stream's
// events by position: the event at index i is sequence number i+1 of the
// stream's head, in the layout of the other clients' event stores (see
// the package mcpevents).
type EventStore struct {
	log     *mcpevents.Log
	keep    bool
	replays atomic.Uint64
}

var _ mcp.EventStore = (*EventStore)(nil)

// NewEventStore is the store in c's namespace.
func NewEventStore(c *handlestore.Client, opts EventStoreOptions) (*EventStore, error) {
	if err := mcpevents.CheckPrefix(opts.Prefix); err != nil {
		return nil, err
	}
	return &EventStore{
		log:  mcpevents.New(c, mcpevents.Options{Prefix: opts.Prefix, TTL: opts.TTL, MaxEvents: opts.MaxEvents}),
		keep: opts.KeepOnSessionClosed,
	}, nil
}

// Open implements mcp.EventStore. It makes no call: a stream comes into
// being with its first event (the SDK opens one for every request, most
// of which never store an event).
func (s *EventStore) Open(context.Context, string, string) error { return nil }

// Append implements mcp.EventStore: data is stored as the stream's next
// event (nil or empty data, the SDK's priming event, as null). The
// stream's first event writes its liveness record (see liveFor), kept
// until the stream's response is stored.
func (s *EventStore) Append(ctx context.Context, sessionID, streamID string, data []byte) error {
	_, err := s.log.Append(ctx, sessionID, streamID, data, s.liveFor(ctx, sessionID, streamID))
	return err
}

// liveFor is what the process running a stream says of it: the ids of
// the requests of the POST (seen by Resume) that opened it. A stateless
// stream (no session) is kept alive only while that POST runs, as only
// its end tells that the stream can get nothing more; a session's streams
// while the session lives here.
func (s *EventStore) liveFor(ctx context.Context, sessionID, streamID string) *mcpevents.Live {
	if p := postOf(ctx); p != nil && streamID != "" && p.opened(sessionID, streamID) {
		return &mcpevents.Live{Requests: p.ids}
	}
	if sessionID == "" {
		return nil
	}
	return &mcpevents.Live{}
}

// After implements mcp.EventStore: the data of the events after index, in
// order, all read before the first is yielded. It yields ErrUnknownStream
// for a stream the cluster does not have (except from index -1: a stream
// opened but with nothing stored yet), and an error wrapping
// mcp.ErrEventsPurged if an event after index is gone (expired, pushed out
// by MaxEvents, or never stored because its Append failed), never a part
// of the events.
func (s *EventStore) After(ctx context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		data, err := s.after(ctx, sessionID, streamID, index)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range data {
			if !yield(d, nil) {
				return
			}
		}
	}
}

func (s *EventStore) after(ctx context.Context, sessionID, streamID string, index int) ([][]byte, error) {
	if index < -1 {
		return nil, fmt.Errorf("gosdk: event index %d: %w", index, handlestore.ErrInvalidArgument)
	}
	head, ok, err := s.log.Head(ctx, sessionID, streamID)
	if err != nil {
		return nil, err
	}
	if !ok {
		if index == -1 {
			return nil, nil
		}
		return nil, fmt.Errorf("unknown stream ID %s in session %s: %w", mcpevents.Shown(streamID), mcpevents.Shown(sessionID), ErrUnknownStream)
	}
	first := uint64(index) + 2 // the sequence number of the event at index+1
	evs, err := s.log.After(ctx, head.Token, first-1)
	if err != nil {
		return nil, err
	}
	evs, err = contiguous(evs, first, head, sessionID, streamID)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(evs))
	for i, e := range evs {
		out[i] = e.Data
	}
	return out, nil
}

// contiguous is evs up to their first gap, if they hold every event from
// sequence number first through the head read before them; else an error
// wrapping mcp.ErrEventsPurged.
func contiguous(evs []mcpevents.Event, first uint64, head mcpevents.Head, sessionID, streamID string) ([]mcpevents.Event, error) {
	n := 0
	for n < len(evs) && evs[n].Seq == first+uint64(n) {
		n++
	}
	if next := first + uint64(n); next <= head.Seq {
		return nil, fmt.Errorf("stream ID %s in session %s: the event at index %d is gone: %w",
			mcpevents.Shown(streamID), mcpevents.Shown(sessionID), next-1, mcp.ErrEventsPurged)
	}
	return evs[:n], nil
}

// SessionClosed implements mcp.EventStore: it deletes the session's
// streams, on every replica, and with them their liveness records (the
// empty session, the one every request of a stateless handler is in, is
// never deleted: its events expire, and Resume releases each request's
// stream when its POST ends).
func (s *EventStore) SessionClosed(ctx context.Context, sessionID string) error {
	if s.keep || sessionID == "" {
		return nil
	}
	return s.log.PurgeSession(ctx, sessionID)
}
