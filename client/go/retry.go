package handlestore

import (
	"math/rand/v2"
	"strconv"
	"time"

	"google.golang.org/grpc/metadata"
)

// LeaderHeader is the metadata key a node names the leader's client
// address under ("host:port"): on UNAVAILABLE answers, and on the answer to
// a write a follower forwarded, so the next call goes there.
const LeaderHeader = wireLeaderHeader

func firstValue(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// leaderOf is the leader address an answer's metadata names, if any.
func leaderOf(md metadata.MD) string {
	return firstValue(md, LeaderHeader)
}

// pushback is the wait a node that refused a call for load asked for,
// honoured up to wireMaxPushback.
func pushback(md metadata.MD) time.Duration {
	ms, err := strconv.ParseInt(firstValue(md, wirePushbackHeader), 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	return min(time.Duration(ms)*time.Millisecond, wireMaxPushback)
}

// Backoff is the wait between retries: full jitter over Base * 2^tries,
// capped at Max.
type Backoff struct {
	Base, Max time.Duration
}

// wait is the time before the next try after `tries` failed ones.
func (b Backoff) wait(tries int) time.Duration {
	limit := min(b.Max, b.Base<<min(tries, 16))
	if limit <= 0 {
		return 0
	}
	return rand.N(limit + 1)
}
