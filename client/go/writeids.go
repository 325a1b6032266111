package handlestore

import (
	"crypto/rand"
	"encoding/binary"
	"math"
	"sync"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// writeIDs is a client's exactly-once sequence, as the other clients keep
// it: a random 64-bit client id and seq 1, 2, 3, ...; each write id also
// names the lowest seq still in flight (first_incomplete_seq), below which
// the cluster may forget the answers it remembers. Every retry of a write
// reuses its id, so the state machine answers a duplicate with the first
// answer instead of applying it twice.
type writeIDs struct {
	clientID uint64
	mu       sync.Mutex
	next     uint64
	// low is the lowest seq that may still be in flight.
	low      uint64
	inFlight map[uint64]struct{}
}

// drawClientID is a client id in 1..2^64-2, as the Rust client draws it.
func drawClientID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if id := binary.BigEndian.Uint64(b[:]); id != 0 && id != math.MaxUint64 {
			return id
		}
	}
}

func newWriteIDs() *writeIDs {
	return &writeIDs{clientID: drawClientID(), next: 1, low: 1, inFlight: map[uint64]struct{}{}}
}

// ticket is one write's id, held until the write is answered or given up
// unsent.
type ticket struct {
	ids  *writeIDs
	id   *pb.WriteId
	once sync.Once
}

// take issues the next write id. The seq is taken under the lock of the
// set it joins, so no id claims a lower one done while it is still being
// issued.
func (w *writeIDs) take() *ticket {
	w.mu.Lock()
	defer w.mu.Unlock()
	seq := w.next
	w.next++
	w.inFlight[seq] = struct{}{}
	for w.low < seq {
		if _, busy := w.inFlight[w.low]; busy {
			break
		}
		w.low++
	}
	return &ticket{ids: w, id: &pb.WriteId{ClientId: w.clientID, Seq: seq, FirstIncompleteSeq: w.low}}
}

// release: the write was answered, or given up unsent.
func (t *ticket) release() {
	t.once.Do(func() {
		t.ids.mu.Lock()
		delete(t.ids.inFlight, t.id.GetSeq())
		t.ids.mu.Unlock()
	})
}
