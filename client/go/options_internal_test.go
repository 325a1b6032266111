package handlestore

import (
	"errors"
	"testing"
	"time"
)

func TestWriteOptions(t *testing.T) {
	var out WriteOutcome
	cases := []struct {
		name string
		opts []StoreOption
		ttl  time.Duration
		cond *uint64
		out  *WriteOutcome
	}{
		{"none: unconditional, the default TTL", nil, TTLDefault, nil, nil},
		{"IfRevision(0): only if absent", []StoreOption{IfRevision(0)}, 0, ptr(0), nil},
		{"a nil option is ignored", []StoreOption{nil, TTL(time.Second), nil}, time.Second, nil, nil},
		{"the last of a kind counts", []StoreOption{IfRevision(1), TTL(TTLNever), IfRevision(2)}, TTLNever, ptr(2), nil},
		{"the zero Condition takes one back", []StoreOption{IfRevision(1), Condition{}}, 0, nil, nil},
		{"Outcome", []StoreOption{Outcome(&out)}, 0, nil, &out},
		{"the old StoreOptions", []StoreOption{StoreOptions{TTL: time.Minute, ExpectedRevision: Revision(7)}}, time.Minute, ptr(7), nil},
		{"the old StoreOptions, zero", []StoreOption{StoreOptions{}}, 0, nil, nil},
	}
	for _, c := range cases {
		o := storeOptions(c.opts)
		if o.ttl != c.ttl || !samePtr(o.cond.wire(), c.cond) || o.outcome != c.out {
			t.Errorf("%s: %+v (expected revision %v)", c.name, o, o.cond.wire())
		}
	}
	if o := writeOptionsOf([]WriteOption{nil, IfRevision(3), Outcome(&out)}); !samePtr(o.cond.wire(), ptr(3)) || o.outcome != &out {
		t.Errorf("write options: %+v", o)
	}
}

func TestOutcomeIsReportedOnlyWhereAsked(t *testing.T) {
	writeOptions{}.report(WriteOutcome{Revision: 1})
	var out WriteOutcome
	writeOptionsOf([]WriteOption{Outcome(&out)}).report(WriteOutcome{Existed: true, Revision: 9})
	if out != (WriteOutcome{Existed: true, Revision: 9}) {
		t.Fatalf("%+v", out)
	}
}

func TestStoreItemCondition(t *testing.T) {
	for _, c := range []struct {
		item StoreItem
		want *uint64
	}{
		{StoreItem{Key: "k"}, nil},
		{StoreItem{Key: "k", If: IfRevision(4)}, ptr(4)},
		{StoreItem{Key: "k", ExpectedRevision: Revision(5)}, ptr(5)},
	} {
		cond, err := c.item.condition()
		if err != nil || !samePtr(cond.wire(), c.want) {
			t.Errorf("%+v: %v %v", c.item, cond.wire(), err)
		}
	}
	_, err := StoreItem{Key: "k", If: IfRevision(1), ExpectedRevision: Revision(1)}.condition()
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("both: %v", err)
	}
}

func ptr(v uint64) *uint64 { return &v }

// samePtr: both nil, or both pointing at equal values.
func samePtr(a, b *uint64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
