package handlestore

import "time"

// Per-call options of the writes, in the variadic shape of nats.go's
// jetstream.KVDeleteOpt: a call without options says nothing about them,
// one that needs a compare-and-set names it (IfRevision), and options are
// added later without changing the signatures. A nil option is ignored,
// and of two of one kind the last counts.

// StoreOption is an option of StateTool.Store: a WriteOption, or TTL.
type StoreOption interface {
	applyStore(*writeOptions)
}

// WriteOption is an option of every write: HandleStore.Put and Delete,
// StateTool.Store and Delete. IfRevision and Outcome are ones.
type WriteOption interface {
	StoreOption
	applyWrite(*writeOptions)
}

// writeOptions is what a write's options ask for.
type writeOptions struct {
	ttl     time.Duration
	cond    Condition
	outcome *WriteOutcome
}

func storeOptions(opts []StoreOption) writeOptions {
	var o writeOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyStore(&o)
		}
	}
	return o
}

func writeOptionsOf(opts []WriteOption) writeOptions {
	var o writeOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyWrite(&o)
		}
	}
	return o
}

// report gives the caller of Outcome what the write did.
func (o writeOptions) report(w WriteOutcome) {
	if o.outcome != nil {
		*o.outcome = w
	}
}

// Condition makes a write a compare-and-set (IfRevision). The zero
// Condition is none: the write is applied whatever the revision.
type Condition struct {
	rev uint64
	set bool
}

// IfRevision makes a write a compare-and-set: it is applied only if the
// key (or handle) is at revision rev, its ModRevision, and 0 means only if
// it is absent. Otherwise the write fails with ErrRevisionMismatch (the
// Error's CurrentRevision says where it is), or ErrNotFound if it is gone.
func IfRevision(rev uint64) Condition { return Condition{rev: rev, set: true} }

// ifRevisionAt is the condition of the old pointer options (nil: none).
func ifRevisionAt(rev *uint64) Condition {
	if rev == nil {
		return Condition{}
	}
	return IfRevision(*rev)
}

// wire is the condition as the wire's optional expected_revision.
func (c Condition) wire() *uint64 {
	if !c.set {
		return nil
	}
	rev := c.rev
	return &rev
}

func (c Condition) applyStore(o *writeOptions) { o.cond = c }
func (c Condition) applyWrite(o *writeOptions) { o.cond = c }

// TTL is the time to live of a StateTool.Store, by the rule of TTLDefault
// and TTLNever (without it, the tool's default TTL).
func TTL(ttl time.Duration) StoreOption { return ttlOption(ttl) }

type ttlOption time.Duration

func (t ttlOption) applyStore(o *writeOptions) { o.ttl = time.Duration(t) }

// Outcome has a write fill *out with what it did once it succeeds (whether
// a live value existed, the write's revision), as grpc.Header fills in a
// call's header: for the revision of a HandleStore.Put or Delete, whose
// results are mcpkit's bool.
func Outcome(out *WriteOutcome) WriteOption { return outcomeOption{out} }

type outcomeOption struct{ out *WriteOutcome }

func (r outcomeOption) applyStore(o *writeOptions) { o.outcome = r.out }
func (r outcomeOption) applyWrite(o *writeOptions) { o.outcome = r.out }
