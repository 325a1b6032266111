package mcpevents

import "time"

// The timings and the error of resumed streams that follow their origin
// (docs/dev/resume.md). They are those of proto/vectors/mcp_events.json,
// which a test holds them to.
const (
	// LiveTTL is the TTL of a stream's liveness record: a follower takes the
	// origin for dead once it expires unrefreshed.
	LiveTTL = 10 * time.Second
	// LiveRefresh is how often the origin writes the liveness record again
	// while the stream may still get events from it.
	LiveRefresh = 3 * time.Second
	// Keepalive is the silence after which a follower sends an SSE comment,
	// where its SDK lets it write one.
	Keepalive = 15 * time.Second
)

// The error response a follower appends for a request whose origin stopped
// before it answered: code and message exactly so, data {"reason": reason}.
const (
	OriginLostCode    = -32603
	OriginLostMessage = "the replica running this request stopped before it answered; every event it stored was delivered, and whether the request took effect is unknown"
	OriginLostReason  = "origin_lost"
)

// The widths of the bucket and sequence numbers in an event's key, in
// digits.
const (
	bucketWidth = 12
	seqWidth    = 20
)

// liveEndedTTL is the TTL the completing event's batch writes the
// liveness record with: a batch cannot delete a key, so the record is
// written expired at once (the node's sweep removes it, and a watcher sees
// it expire).
const liveEndedTTL = time.Millisecond
