package gosdk

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/handlestore/handlestore/client/go/internal/mcpevents"
)

// follow serves a resumption of a stream this replica does not hold: the
// SSE response is written here, in the SDK's framing and event ids, as
// the SDK's transport has no seam that could keep a response open for
// events it does not send itself (its replay reads the whole store before
// writing, then ends).
func (h *resumer) follow(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(lastEventIDHeader)
	stream, index, ok := parseEventID(id)
	if !ok {
		http.Error(w, fmt.Sprintf("malformed Last-Event-ID %q", id), http.StatusBadRequest)
		return
	}
	h.store.replays.Add(1)
	f, err := h.store.follower(r.Context(), r.Header.Get(sessionHeader), stream, index)
	if err != nil {
		// The SDK's answer to a replay it cannot make.
		http.Error(w, "failed to replay events", http.StatusBadRequest)
		return
	}
	out := &sse{w: w, rc: http.NewResponseController(w), stream: stream}
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	if f.CanAnswer() && !f.Complete() {
		// The client's own last id first, so that a response cut before its
		// next event still resumes from it: go-sdk's client keeps only the
		// ids it read on the response it reads, and ends the call on one
		// that had none. Not when the follower may have to end without an
		// answer: the client then ends the call with an error.
		_ = out.write(fmt.Appendf(nil, "event: prime\nid: %s\ndata: \n\n", id))
	} else {
		_ = out.rc.Flush()
	}
	_ = f.Run(r.Context(), out.event, out.keepalive)
}

// follower starts the resumption after the event at index of stream in
// session: an unknown stream is ErrUnknownStream, a gap after index
// mcp.ErrEventsPurged, as After says.
func (s *EventStore) follower(ctx context.Context, sessionID, streamID string, index int) (*mcpevents.Follower, error) {
	head, ok, err := s.log.Head(ctx, sessionID, streamID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("unknown stream ID %s in session %s: %w", mcpevents.Shown(streamID), mcpevents.Shown(sessionID), ErrUnknownStream)
	}
	seq := uint64(index) + 1 // the client's last event
	f, err := s.log.Follow(ctx, sessionID, streamID, head.Token, seq)
	if err != nil {
		return nil, err
	}
	if _, err := contiguous(f.Replay(), seq+1, head, sessionID, streamID); err != nil {
		return nil, err
	}
	return f, nil
}

// parseEventID is the SDK's: "<stream>_<index>", index a non-negative
// integer.
func parseEventID(id string) (stream string, index int, ok bool) {
	parts := strings.Split(id, "_")
	if len(parts) != 2 {
		return "", 0, false
	}
	index, err := strconv.Atoi(parts[1])
	if err != nil || index < 0 {
		return "", 0, false
	}
	return parts[0], index, true
}

// sse writes a resumption's events as the SDK's transport does.
type sse struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	stream string
}

func (s *sse) write(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// event writes e with the SDK's id for it: the stream and e's index.
func (s *sse) event(e mcpevents.Event) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: message\nid: %s_%d\ndata: ", s.stream, e.Seq-1)
	b.Write(e.Data)
	b.WriteString("\n\n")
	return s.write(b.Bytes())
}

// keepalive is an SSE comment: go-sdk's client skips it.
func (s *sse) keepalive() error { return s.write([]byte(": keepalive\n\n")) }
