package mcpevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// OriginLost is the error response a follower appends for request id (as
// sent) once the stream's origin is gone without answering it.
func OriginLost(id json.RawMessage) []byte {
	type data struct {
		Reason string `json:"reason"`
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    data   `json:"data"`
	}
	msg, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{OriginLostCode, OriginLostMessage, data{OriginLostReason}}})
	return msg
}

// answerForOrigin ends a stream whose origin is gone: it sends what is
// stored and, if the stream is still not complete, appends one origin_lost
// error response per request not yet answered, by compare-and-set on the
// head at the last sequence number sent, and sends them. If another
// follower appended first, what it appended is sent instead.
func (f *Follower) answerForOrigin(ctx context.Context, send func(Event) error) error {
	for range appendAttempts {
		evs, err := f.log.After(ctx, f.token, f.sent)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := f.deliver(e, send); err != nil {
				return err
			}
		}
		if f.pending.Complete() {
			return nil
		}
		if !f.CanAnswer() {
			return ErrNoAnswer
		}
		head, ok, err := f.log.Head(ctx, f.session, f.stream)
		if err != nil {
			return err
		}
		if !ok || head.Token != f.token {
			return ErrStreamGone
		}
		if head.Seq != f.sent {
			continue // stored since the read: send it first
		}
		lost, err := f.log.appendAt(ctx, f.session, f.stream, head, f.pending.Unanswered())
		if errors.Is(err, handlestore.ErrRevisionMismatch) || errors.Is(err, handlestore.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range lost {
			if err := f.deliver(e, send); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("event stream %s: %d appends lost to other writers: %w", Shown(f.stream), appendAttempts, handlestore.ErrUnavailable)
}

// appendAt appends an origin_lost response for each request after head,
// in one batch that moves the head by compare-and-set from head.
func (l *Log) appendAt(ctx context.Context, session, stream string, head Head, requests []json.RawMessage) ([]Event, error) {
	key := l.HeadKey(session, stream)
	unlock := l.lock(key)
	defer unlock()
	next := Head{Token: head.Token, Seq: head.Seq + uint64(len(requests))}
	headValue, _ := json.Marshal(next)
	items := []handlestore.StoreItem{{Key: key, Value: json.RawMessage(headValue), TTL: l.ttl, If: handlestore.IfRevision(head.Revision)}}
	evs := make([]Event, len(requests))
	for i, id := range requests {
		evs[i] = Event{Seq: head.Seq + 1 + uint64(i), Data: OriginLost(id)}
		items = append(items, handlestore.StoreItem{Key: l.EventKey(head.Token, evs[i].Seq), Value: eventValue(evs[i].Data), TTL: l.ttl})
	}
	rev, err := l.state.BatchStore(ctx, items)
	if err != nil {
		return nil, err
	}
	next.Revision = rev
	l.mu.Lock()
	if _, cached := l.heads[key]; cached {
		l.heads[key] = next
	}
	l.mu.Unlock()
	return evs, nil
}
