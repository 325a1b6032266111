package handlestore

import (
	"time"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// Time to live, with mcpkit's HandleStore convention (and the other
// clients'):
//
//   - ttl > 0: the entry expires that long after the write;
//   - ttl == 0 (TTLDefault): the store's default TTL, whose own 0 means never;
//   - ttl < 0 (TTLNever): never expires, whatever the default.
//
// Expiry is decided by the cluster (the leader's clock), never by the
// client.
const (
	TTLDefault time.Duration = 0
	TTLNever   time.Duration = -1
)

// ttlMillis is a TTL as the wire's signed milliseconds. A positive TTL
// under a millisecond rounds up to one: it must still expire.
func ttlMillis(ttl time.Duration) int64 {
	switch {
	case ttl == 0:
		return 0
	case ttl < 0:
		return -1
	}
	return int64((ttl + time.Millisecond - 1) / time.Millisecond)
}

// defaultTTLMillis is a store's default TTL on the wire (0 = never).
func defaultTTLMillis(ttl time.Duration) uint64 {
	return uint64(max(ttlMillis(ttl), 0))
}

func wireTTL(ttl, def time.Duration, keep bool) *pb.Ttl {
	return &pb.Ttl{TtlMs: ttlMillis(ttl), DefaultTtlMs: defaultTTLMillis(def), Keep: keep}
}

// expiry is a wire expiry (unix ms, 0 = never) as a time (zero = never).
func expiry(ms uint64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms))
}
