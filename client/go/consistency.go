package handlestore

import pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"

// Consistency of a read, chosen per store or per call. The zero value is
// Linearizable.
type Consistency struct {
	kind pb.Consistency
	min  uint64
}

var (
	// Linearizable (the default): read-index from the leader, served once
	// the node has applied it.
	Linearizable = Consistency{kind: pb.Consistency_CONSISTENCY_LINEARIZABLE}
	// Stale: whatever the serving node has applied.
	Stale = Consistency{kind: pb.Consistency_CONSISTENCY_STALE}
)

// AtLeast is served by a node that has applied at least revision
// (read-your-writes without a leader round trip).
func AtLeast(revision uint64) Consistency {
	return Consistency{kind: pb.Consistency_CONSISTENCY_AT_LEAST, min: revision}
}

func (c Consistency) wire() *pb.ReadOptions {
	return &pb.ReadOptions{Consistency: c.kind, MinRevision: c.min}
}

// or is c, unless a call gave its own.
func (c Consistency) or(call *Consistency) Consistency {
	if call != nil {
		return *call
	}
	return c
}
