package hsmcpkit_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/hsmcpkit"
	"github.com/handlestore/handlestore/client/go/hsmcpkit/internal/mcpkit"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// The drop-in has the method set of mcpkit's HandleStore[T] (v0.5.2's
// server/handles.go; the declaration in internal/mcpkit).
var _ mcpkit.HandleStore[Cart] = (*hsmcpkit.HandleStore[Cart])(nil)

// session is one store under a script of calls, with the ids it minted
// by name.
type session struct {
	s   mcpkit.HandleStore[int]
	ids map[string]string
}

// id is the id named name: minted earlier, else the name itself (a
// caller-chosen id).
func (r *session) id(name string) string {
	if id, ok := r.ids[name]; ok {
		return id
	}
	return name
}

// step is one call; it says what the call answered, ids shown by shape.
type step struct {
	call string
	do   func(r *session) string
	// differs is what each store answers where they may differ: a
	// difference mcpkit's docs allow ("" where they answer alike).
	differs      string
	mcpkit, ours string
}

func get(name string) step {
	return step{call: "get " + name, do: func(r *session) string {
		v, ok := r.s.Get(r.id(name))
		return fmt.Sprint(v, ok)
	}}
}

func put(name string, v int, ttl time.Duration) step {
	return step{call: fmt.Sprintf("put %s=%d ttl %v", name, v, ttl), do: func(r *session) string {
		return fmt.Sprint(r.s.Put(r.id(name), v, ttl))
	}}
}

func del(name string) step {
	return step{call: "delete " + name, do: func(r *session) string { return fmt.Sprint(r.s.Delete(r.id(name))) }}
}

func mint(name string, v int, ttl time.Duration) step {
	return step{call: fmt.Sprintf("mint %s=%d ttl %v", name, v, ttl), do: func(r *session) string {
		id := r.s.Mint(v, ttl)
		r.ids[name] = id
		return mintedID.ReplaceAllString(id, "cart-<26 base32>")
	}}
}

var length = step{call: "len", do: func(r *session) string { return fmt.Sprint(r.s.Len()) }}

var closing = step{call: "close", do: func(r *session) string { r.s.Close(); return "" }}

// expire waits out the TTLs of 300 ms.
var expire = step{call: "(the short TTLs pass)", do: func(*session) string { time.Sleep(time.Second); return "" }}

// differing is s, where mcpkit's in-memory store (modelled) answers otherwise.
func (s step) differing(mcpkitSays, oursSays, why string) step {
	s.mcpkit, s.ours, s.differs = mcpkitSays, oursSays, why
	return s
}

// script is mcpkit's interface, call by call, with what its docs promise:
// caller-chosen ids, expiry, Len, and every call after Close.
func script(seed string) []step {
	const short = 300 * time.Millisecond
	return []step{
		mint("a", 1, 0), get("a"), put("a", 2, 0), get("a"),
		// Put under a caller-chosen id inserts it (false), then updates it.
		put("order-42", 42, 0), get("order-42"), put("order-42", 43, 0), get("order-42"),
		put("", 7, 0), get(""), put("user:alice/ö", 8, -1), get("user:alice/ö"),
		put(seed, 9, 0), get(seed),
		get("never-put"), del("never-put"), get(handlestore.NewHandleID("cart")),
		del("order-42"), del("order-42"), get("order-42"),
		length,
		// Expiry: a Get sees none; Put on an expired id stores it again.
		mint("b", 10, short), put("c", 11, short), put("d", 12, short), put("a", 3, -1), expire,
		get("b"), put("b", 13, 0), get("b"),
		put("c", 14, 0).differing("true", "false", "an expired entry not yet swept (no Get since) is one to mcpkit's map"),
		get("c"),
		length.differing("7", "6", "mcpkit's Len counts d, expired and not swept, as its docs allow"),
		get("d"), length,
		// After Close every call answers as before.
		closing, get("a"), put("a", 4, 0), get("a"), mint("e", 15, 0), get("e"), del("e"), length, closing, get("a"),
	}
}

// TestTheDropInAnswersAsMcpkit runs one script of calls on a model of
// mcpkit's in-memory store (internal/mcpkit) and on the drop-in made from
// the environment, and compares each answer.
func TestTheDropInAnswersAsMcpkit(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	t.Setenv("HANDLESTORE_ENDPOINTS", strings.Join(cluster.Endpoints(), ","))
	t.Setenv("HANDLESTORE_NAMESPACE", "go-mcpkit-compare")

	theirs := &session{s: mcpkit.NewStore[int]("cart"), ids: map[string]string{}}
	ours := &session{s: hsmcpkit.NewHandleStoreFromEnv[int]("compare", hsmcpkit.WithHandleIDPrefix("cart")), ids: map[string]string{}}
	seed := handlestore.NewHandleID("seed")
	for i, st := range script(seed) {
		want, got := st.do(theirs), st.do(ours)
		switch {
		case st.differs == "" && got != want:
			t.Errorf("%d %s: mcpkit %q, the drop-in %q", i, st.call, want, got)
		case st.differs != "" && (want != st.mcpkit || got != st.ours):
			t.Errorf("%d %s: mcpkit %q, the drop-in %q; want %q and %q (%s)", i, st.call, want, got, st.mcpkit, st.ours, st.differs)
		}
	}
	if t.Failed() {
		return
	}
	// A caller-chosen id is under its WireID, the same for every client.
	other := cluster.Client(handlestore.Config{Namespace: "go-mcpkit-compare", Endpoints: cluster.Endpoints()[2:]})
	v, ok, err := testkit.Must[*handlestore.HandleStore[int]](t)(handlestore.NewHandleStore[int](other, "compare", handlestore.HandleStoreOptions{})).
		Get(testkit.Ctx(t), hsmcpkit.WireID("user:alice/ö"))
	if err != nil || !ok || v != 8 {
		t.Fatalf("user:alice/ö from another client: %v %v %v", v, ok, err)
	}
}
