package hsmcpkit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/hsmcpkit"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// failures collects what OnError is called with.
type failures struct {
	mu  sync.Mutex
	ops []string
	err []error
}

func (f *failures) hook(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, op)
	f.err = append(f.err, err)
}

func (f *failures) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.ops...)
}

func newStore[T any](t *testing.T, c *handlestore.Client, store string, opts hsmcpkit.Options) *hsmcpkit.HandleStore[T] {
	t.Helper()
	s := hsmcpkit.NewHandleStore[T](c, store, opts)
	t.Cleanup(s.Close)
	return s
}

// noErr fails the test if the store recorded an error.
func noErr(t *testing.T, s interface{ Err() error }) {
	t.Helper()
	if err := s.Err(); err != nil {
		t.Fatalf("recorded %v", err)
	}
}

var mintedID = regexp.MustCompile(`^cart-[A-Z2-7]{26}$`)

func TestMcpkitContract(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	const ns = "go-mcpkit"
	client := cluster.Client(handlestore.Config{Namespace: ns})
	var f failures
	hooked := hsmcpkit.Options{OnError: f.hook}

	t.Run("mint and get, from every node; ids are mcpkit's", func(t *testing.T) {
		carts := newStore[Cart](t, client, "cart", hsmcpkit.Options{Prefix: "cart", OnError: f.hook})
		id := carts.Mint(Cart{Total: 4.5, Items: []CartItem{{SKU: "apple", Quantity: 9, Price: 0.5}}}, 0)
		if !mintedID.MatchString(id) {
			t.Fatalf("id %q: want cart- and 26 base32 characters", id)
		}
		for _, ep := range cluster.Endpoints() {
			one := cluster.Client(handlestore.Config{Namespace: ns, Endpoints: []string{ep}})
			got, ok := newStore[Cart](t, one, "cart", hooked).Get(id)
			if !ok || got.Total != 4.5 || len(got.Items) != 1 || got.Items[0].SKU != "apple" {
				t.Fatalf("%s: %+v %v", ep, got, ok)
			}
		}
		plain := newStore[int](t, client, "plain", hooked)
		if id := plain.Mint(1, 0); !regexp.MustCompile(`^[A-Z2-7]{26}$`).MatchString(id) {
			t.Fatalf("id %q without a prefix", id)
		}
		// Stores are apart: an id of one names nothing in another.
		if _, ok := newStore[Cart](t, client, "order", hooked).Get(id); ok {
			t.Fatal("a cart id read from the order store")
		}
		noErr(t, carts)
	})

	t.Run("unknown ids are absent, without an error", func(t *testing.T) {
		s := newStore[Cart](t, client, "unknown", hooked)
		for _, id := range []string{handlestore.NewHandleID("cart"), "does-not-exist", "", "cart-" + strings.Repeat("A", 26) + "/x"} {
			if v, ok := s.Get(id); ok || v.Items != nil || v.Total != 0 {
				t.Fatalf("get %q: %+v %v", id, v, ok)
			}
			if s.Delete(id) {
				t.Fatalf("delete %q existed", id)
			}
		}
		noErr(t, s)
	})

	t.Run("put: an upsert that says whether the handle existed", func(t *testing.T) {
		s := newStore[Cart](t, client, "put", hooked)
		id := s.Mint(Cart{Total: 1}, 0)
		if !s.Put(id, Cart{Total: 99}, 0) {
			t.Fatal("put over a minted handle: existed false")
		}
		if v, ok := s.Get(id); !ok || v.Total != 99 {
			t.Fatalf("after put: %+v %v", v, ok)
		}
		noErr(t, s)
	})

	t.Run("a caller-chosen id is stored, under its WireID, for every replica", func(t *testing.T) {
		s := newStore[int](t, client, "named", hooked)
		seeded := handlestore.NewHandleID("seed")
		for _, id := range []string{seeded, "order-42", "user:alice/ö", "", strings.Repeat("x", 5000)} {
			if s.Put(id, len(id), 0) {
				t.Fatalf("put under a new id %.20q: existed true", id)
			}
			for _, ep := range cluster.Endpoints() {
				one := cluster.Client(handlestore.Config{Namespace: ns, Endpoints: []string{ep}})
				if v, ok := newStore[int](t, one, "named", hooked).Get(id); !ok || v != len(id) {
					t.Fatalf("%s: get %.20q: %v %v", ep, id, v, ok)
				}
			}
			if v, ok, err := s.Underlying().Get(testkit.Ctx(t), hsmcpkit.WireID(id)); err != nil || !ok || v != len(id) {
				t.Fatalf("the wire id of %.20q: %v %v %v", id, v, ok, err)
			}
		}
		if hsmcpkit.WireID(seeded) != seeded || !regexp.MustCompile(`^named-[A-Z2-7]{26}$`).MatchString(hsmcpkit.WireID("order-42")) ||
			hsmcpkit.WireID("order-42") == hsmcpkit.WireID("order-43") {
			t.Fatalf("wire ids: %s %s %s", hsmcpkit.WireID(seeded), hsmcpkit.WireID("order-42"), hsmcpkit.WireID("order-43"))
		}
		if n := s.Len(); n != 5 {
			t.Fatalf("len %d", n)
		}
		noErr(t, s)
	})

	t.Run("delete says whether it was present; len counts live handles", func(t *testing.T) {
		s := newStore[int](t, client, "delete", hooked)
		a, b := s.Mint(1, 0), s.Mint(2, 0)
		if n := s.Len(); n != 2 {
			t.Fatalf("len %d", n)
		}
		if !s.Delete(a) || s.Delete(a) {
			t.Fatal("delete: want true, then false")
		}
		if _, ok := s.Get(a); ok {
			t.Fatal("get after delete")
		}
		if n := s.Len(); n != 1 {
			t.Fatalf("len %d after a delete", n)
		}
		if v, ok := s.Get(b); !ok || v != 2 {
			t.Fatalf("the other handle: %v %v", v, ok)
		}
		noErr(t, s)
	})

	t.Run("TTL: > 0 that TTL, 0 the default, < 0 never", func(t *testing.T) {
		short := newStore[int](t, client, "ttl", hsmcpkit.Options{DefaultTTL: 400 * time.Millisecond, OnError: f.hook})
		plain := newStore[int](t, client, "ttl-plain", hooked)
		own := short.Mint(1, 300*time.Millisecond)
		byDefault := short.Mint(2, 0)
		never := short.Mint(3, -1)
		noDefault := plain.Mint(4, 0)
		longer := plain.Mint(5, time.Hour)
		refreshed := short.Mint(6, 0)
		if short.Put(refreshed, 60, -1) != true {
			t.Fatal("put over a live handle: existed false")
		}
		shortened := plain.Mint(7, -1)
		plain.Put(shortened, 70, 300*time.Millisecond)
		time.Sleep(1500 * time.Millisecond)
		for id, live := range map[string]bool{own: false, byDefault: false, never: true, refreshed: true} {
			if _, ok := short.Get(id); ok != live {
				t.Errorf("%s: live %v, want %v", id, ok, live)
			}
		}
		for id, live := range map[string]bool{noDefault: true, longer: true, shortened: false} {
			if _, ok := plain.Get(id); ok != live {
				t.Errorf("%s: live %v, want %v", id, ok, live)
			}
		}
		if n := short.Len(); n != 2 {
			t.Errorf("len %d counts expired handles", n)
		}
		noErr(t, short)
		noErr(t, plain)
	})

	t.Run("after close every call answers; twice is fine", func(t *testing.T) {
		s := hsmcpkit.NewHandleStore[int](client, "close", hooked)
		id := s.Mint(1, 0)
		s.Close()
		s.Close()
		if v, ok := s.Get(id); !ok || v != 1 {
			t.Fatalf("get after close: %v %v", v, ok)
		}
		if !s.Put(id, 2, 0) || s.Mint(3, 0) == "" || s.Len() != 2 || !s.Delete(id) {
			t.Fatal("a call after close")
		}
		noErr(t, s)
	})

	t.Run("without a hook, failures go to the logger, without the id", func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		dead, err := handlestore.New(handlestore.Config{Endpoints: []string{"127.0.0.1:1"}})
		testkit.NoErr(t, err)
		defer dead.Close()
		id := handlestore.NewHandleID("cart")
		offline := newStore[int](t, dead, "logged", hsmcpkit.Options{Logger: logger, Timeout: 300 * time.Millisecond})
		e := panicked(t, func() { offline.Get(id) })
		if line := buf.String(); !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "op=get") ||
			!strings.Contains(line, "store=logged") || strings.Contains(line, id) {
			t.Fatalf("logged %q (the id must not be in it)", line)
		}
		// A handle id is a capability: the panic's message (logged by
		// mcpkit's dispatcher) leaves it out; the OpError has it.
		if e.ID != id || e.Op != "get" || strings.Contains(e.Error(), id) || offline.Err() != e {
			t.Fatalf("panicked with %#v (%v), recorded %v", e, e, offline.Err())
		}
		buf.Reset()
		var mine failures
		withHook := newStore[int](t, dead, "logged", hsmcpkit.Options{Logger: logger, OnError: mine.hook, Timeout: 300 * time.Millisecond})
		panicked(t, func() { withHook.Put("order-42", 1, 0) })
		if buf.Len() != 0 || strings.Join(mine.seen(), ",") != "put" {
			t.Fatalf("with a hook: logged %q, hook saw %v", buf.String(), mine.seen())
		}
	})

	if ops := f.seen(); len(ops) != 0 {
		t.Fatalf("the shared hook saw %v", ops)
	}
}

// panicked is what call panicked with, an *OpError, and fails the test
// if it did not panic so.
func panicked(t *testing.T, call func()) (e *hsmcpkit.OpError) {
	t.Helper()
	defer func() {
		r := recover()
		if got, ok := r.(*hsmcpkit.OpError); ok {
			e = got
			return
		}
		t.Fatalf("panicked with %v, want an *hsmcpkit.OpError", r)
	}()
	call()
	return nil
}

func TestMcpkitWithoutQuorum(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	client := cluster.Client(handlestore.Config{Namespace: "go-mcpkit-quorum"})
	const timeout = 1500 * time.Millisecond
	var f failures
	carts := newStore[Cart](t, client, "cart", hsmcpkit.Options{Prefix: "cart", Timeout: timeout, OnError: f.hook})
	id := carts.Mint(Cart{Total: 3}, 0)
	noErr(t, carts)

	leader := cluster.WaitLeader(10 * time.Second)
	cluster.Kill(leader)
	cluster.Kill(leader%3 + 1)

	// Each call panics, within the timeout, with why; and records it.
	within := func(op string, call func()) {
		t.Helper()
		start := time.Now()
		e := panicked(t, call)
		if took := time.Since(start); took > timeout+time.Second {
			t.Fatalf("%s took %v (timeout %v)", op, took, timeout)
		}
		var d *handlestore.DeadlineError
		if e.Op != op || e.Store != "cart" || !errors.As(e, &d) || !errors.Is(e, context.DeadlineExceeded) || carts.Err() != e {
			t.Fatalf("%s panicked with %v, recorded %v", op, e, carts.Err())
		}
	}
	other := handlestore.NewHandleID("cart")
	within("get", func() { carts.Get(id) })
	within("mint", func() { carts.Mint(Cart{}, 0) })
	within("put", func() { carts.Put(other, Cart{Total: 4}, 0) })
	within("delete", func() { carts.Delete(id) })
	within("len", func() { carts.Len() })
	if ops := strings.Join(f.seen(), ","); ops != "get,mint,put,delete,len" {
		t.Fatalf("the hook saw %s", ops)
	}

	// Back to quorum: the same store answers again (once its connections
	// are back), and nothing written without quorum was applied.
	for _, n := range cluster.Nodes {
		if !cluster.Running(n.ID) {
			cluster.Spawn(n.ID)
		}
	}
	cluster.WaitLeader(30 * time.Second)
	if got := readBack(t, carts.Underlying(), id); got.Total != 3 {
		t.Fatalf("after recovery: %+v", got)
	}
	before := len(f.seen())
	if _, ok := carts.Get(other); ok {
		t.Fatal("the put without quorum was applied")
	}
	fresh := carts.Mint(Cart{Total: 5}, 0)
	if v, ok := carts.Get(fresh); !ok || v.Total != 5 {
		t.Fatalf("mint and get after recovery: %q %+v %v", fresh, v, ok)
	}
	if n := carts.Len(); n != 2 {
		t.Fatalf("len %d after recovery", n)
	}
	if len(f.seen()) != before {
		t.Fatalf("failures after recovery: %v", f.seen()[before:])
	}
	// Err keeps the last failure: a success does not clear it.
	if carts.Err() == nil {
		t.Fatal("Err was cleared")
	}
}

func TestNamesAreChecked(t *testing.T) {
	client, err := handlestore.New(handlestore.Config{Endpoints: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	t.Setenv("HANDLESTORE_ENDPOINTS", "127.0.0.1:1")
	for _, bad := range []struct{ store, prefix string }{{"", ""}, {"has/slash", ""}, {"cart", "bad prefix"}} {
		if _, err := hsmcpkit.New[int](client, bad.store, hsmcpkit.Options{Prefix: bad.prefix}); !errors.Is(err, handlestore.ErrInvalidArgument) {
			t.Errorf("New(%q, %q): %v", bad.store, bad.prefix, err)
		}
		if _, err := hsmcpkit.NewFromEnv[int](bad.store, hsmcpkit.WithHandleIDPrefix(bad.prefix)); !errors.Is(err, handlestore.ErrInvalidArgument) {
			t.Errorf("NewFromEnv(%q, %q): %v", bad.store, bad.prefix, err)
		}
		mustPanic(t, fmt.Sprintf("NewHandleStore(%q, %q)", bad.store, bad.prefix), func() {
			hsmcpkit.NewHandleStore[int](client, bad.store, hsmcpkit.Options{Prefix: bad.prefix})
		})
	}
}

func TestTheEnvironmentNamesTheCluster(t *testing.T) {
	t.Setenv("HANDLESTORE_ENDPOINTS", "")
	if _, err := hsmcpkit.NewFromEnv[int]("cart"); err == nil || !strings.Contains(err.Error(), "HANDLESTORE_ENDPOINTS is not set") {
		t.Fatalf("without endpoints: %v", err)
	}
	mustPanic(t, "NewHandleStoreFromEnv without endpoints", func() { hsmcpkit.NewHandleStoreFromEnv[int]("cart") })
	t.Setenv("HANDLESTORE_ENDPOINTS", "127.0.0.1:1")
	t.Setenv("HANDLESTORE_CACERT", "/does/not/exist.pem")
	if _, err := hsmcpkit.NewFromEnv[int]("cart"); err == nil || !strings.Contains(err.Error(), "exist.pem") {
		t.Fatalf("with a missing CA file: %v", err)
	}
}

// mustPanic fails the test if call does not panic.
func mustPanic(t *testing.T, what string, call func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	call()
}

func TestTheDefaultTimeoutBoundsEachCall(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 5 s default")
	}
	// No node answers, and the client's own CallTimeout (15 s) is longer.
	client, err := handlestore.New(handlestore.Config{Endpoints: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var f failures
	s := hsmcpkit.NewHandleStore[int](client, "cart", hsmcpkit.Options{OnError: f.hook})
	start := time.Now()
	e := panicked(t, func() { s.Get(handlestore.NewHandleID("")) })
	if took := time.Since(start); took < hsmcpkit.DefaultTimeout*3/5 || took > hsmcpkit.DefaultTimeout+2*time.Second {
		t.Fatalf("took %v, want about %v", took, hsmcpkit.DefaultTimeout)
	}
	if !errors.Is(e, context.DeadlineExceeded) || len(f.seen()) != 1 {
		t.Fatalf("panicked with %v, hook saw %v", e, f.seen())
	}
}
