package handlestore

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// LeaderHeader is the metadata key a node names the leader's client
// address under ("host:port"): on UNAVAILABLE answers, and on the answer to
// a write a follower forwarded, so the next call goes there.
const LeaderHeader = "x-handlestore-leader"

// pushbackHeader: how long a node that refused a call for load asks
// clients to wait (reason overloaded).
const pushbackHeader = "grpc-retry-pushback-ms"

// maxPushback is the most a pushback is honoured.
const maxPushback = 5 * time.Second

var tlsWords = regexp.MustCompile(`(?i)certificate|handshake|ssl|tls`)

// tlsRefused: a TLS handshake that failed (the node's certificate is not
// from the trusted CA, or it refused ours). It would fail again, so it is
// not retried.
func tlsRefused(s rpcStatus) bool {
	return s.code == codes.Unavailable && s.detail.GetReason() == "" && tlsWords.MatchString(s.message)
}

// retryable: worth trying again elsewhere, the node could not serve it now.
// The error table decides for a known reason; otherwise what a lost node or
// connection looks like (UNAVAILABLE, a deadline, an abort or cancel, a
// reset surfacing as UNKNOWN or INTERNAL without a reason).
func retryable(s rpcStatus) bool {
	reason := Reason(s.detail.GetReason())
	if reason.Known() {
		return reason.Retry() == RetryYes
	}
	switch s.code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return !tlsRefused(s)
	case codes.Unknown, codes.Internal:
		return reason == ""
	}
	return false
}

// resumable: a watch cut off because its consumer fell behind, resumed
// from its position.
func resumable(s rpcStatus) bool {
	return Reason(s.detail.GetReason()).Retry() == RetryResume
}

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

// pushback is the wait a node that refused a call for load asked for.
func pushback(md metadata.MD) time.Duration {
	ms, err := strconv.ParseInt(firstValue(md, pushbackHeader), 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	return min(time.Duration(ms)*time.Millisecond, maxPushback)
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
