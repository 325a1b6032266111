package hsmcpkit_test

import (
	"bytes"
	"context"
	"errors"
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

	t.Run("unknown and malformed ids are absent, without an error or a call", func(t *testing.T) {
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
		seeded := handlestore.NewHandleID("seed")
		if s.Put(seeded, Cart{Total: 7}, 0) {
			t.Fatal("put under a new id: existed true")
		}
		if v, ok := s.Get(seeded); !ok || v.Total != 7 {
			t.Fatalf("the seeded handle: %+v %v", v, ok)
		}
		noErr(t, s)
		// mcpkit's in-memory store takes any id; a cluster's handle ids are
		// well-formed, so a Put under another is refused, and recorded.
		if s.Put("never-minted", Cart{}, 0) {
			t.Fatal("put under a malformed id: existed true")
		}
		var e *hsmcpkit.OpError
		if err := s.Err(); !errors.As(err, &e) || e.Op != "put" || e.ID != "never-minted" || !errors.Is(err, handlestore.ErrInvalidArgument) {
			t.Fatalf("recorded %v", err)
		}
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

	t.Run("close ends the store, not the client; twice is fine", func(t *testing.T) {
		var mine failures
		s := hsmcpkit.NewHandleStore[int](client, "close", hsmcpkit.Options{OnError: mine.hook})
		id := s.Mint(1, 0)
		s.Close()
		s.Close()
		if got := s.Mint(2, 0); got != "" {
			t.Fatalf("minted %q after close", got)
		}
		if _, ok := s.Get(id); ok {
			t.Fatal("get after close")
		}
		if !errors.Is(s.Err(), handlestore.ErrClosed) || strings.Join(mine.seen(), ",") != "mint,get" {
			t.Fatalf("recorded %v, hook saw %v", s.Err(), mine.seen())
		}
		if v, ok := newStore[int](t, client, "close", hooked).Get(id); !ok || v != 1 {
			t.Fatalf("the handle after its store closed: %v %v", v, ok)
		}
	})

	t.Run("without a hook, failures go to the logger", func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		s := newStore[int](t, client, "logged", hsmcpkit.Options{Logger: logger})
		s.Put("bad id", 1, 0)
		if line := buf.String(); !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "op=put") || !strings.Contains(line, "store=logged") {
			t.Fatalf("logged %q", line)
		}
		buf.Reset()
		// A handle id is a capability: it stays out of logs (Err has it).
		dead, err := handlestore.New(handlestore.Config{Endpoints: []string{"127.0.0.1:1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer dead.Close()
		id := handlestore.NewHandleID("cart")
		offline := newStore[int](t, dead, "logged", hsmcpkit.Options{Logger: logger, Timeout: 300 * time.Millisecond})
		if _, ok := offline.Get(id); ok {
			t.Fatal("a Get from no cluster found something")
		}
		if line := buf.String(); !strings.Contains(line, "op=get") || strings.Contains(line, id) {
			t.Fatalf("logged %q (the id must not be in it)", line)
		}
		if err := offline.Err(); err == nil || !strings.Contains(err.Error(), id) {
			t.Fatalf("Err() = %v, want the id in it", err)
		}
		buf.Reset()
		var mine failures
		withHook := newStore[int](t, client, "logged", hsmcpkit.Options{Logger: logger, OnError: mine.hook})
		withHook.Put("bad id", 1, 0)
		if buf.Len() != 0 || len(mine.seen()) != 1 {
			t.Fatalf("with a hook: logged %q, hook saw %v", buf.String(), mine.seen())
		}
	})

	if ops := f.seen(); len(ops) != 1 || ops[0] != "put" {
		t.Fatalf("the shared hook saw %v, want the one malformed put", ops)
	}
}

func TestMcpkitWithoutQuorum(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	client := cluster.Client(handlestore.Config{Namespace: "go-mcpkit-quorum"})
	const timeout = 1500 * time.Millisecond
	var f failures
	carts := newStore[Cart](t, client, "cart", hsmcpkit.Options{Prefix: "cart", Timeout: timeout, OnError: f.hook})
	id := carts.Mint(Cart{Total: 3}, 0)
	if id == "" {
		t.Fatal(carts.Err())
	}
	noErr(t, carts)

	leader := cluster.WaitLeader(10 * time.Second)
	cluster.Kill(leader)
	cluster.Kill(leader%3 + 1)

	// Each call gives its failure value, within the timeout, and records why.
	within := func(what string, call func() bool) {
		t.Helper()
		start := time.Now()
		if !call() {
			t.Fatalf("%s: a wrong answer without quorum", what)
		}
		if took := time.Since(start); took > timeout+time.Second {
			t.Fatalf("%s took %v (timeout %v)", what, took, timeout)
		}
		var e *handlestore.DeadlineError
		if err := carts.Err(); !errors.As(err, &e) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s recorded %v", what, err)
		}
	}
	within("get", func() bool { v, ok := carts.Get(id); return !ok && v.Total == 0 })
	within("mint", func() bool { return carts.Mint(Cart{}, 0) == "" })
	other := handlestore.NewHandleID("cart")
	within("put", func() bool { return !carts.Put(other, Cart{Total: 4}, 0) })
	within("delete", func() bool { return !carts.Delete(id) })
	within("len", func() bool { return carts.Len() == -1 })
	var e *hsmcpkit.OpError
	if !errors.As(carts.Err(), &e) || e.Op != "len" || e.Store != "cart" {
		t.Fatalf("the last error: %v", carts.Err())
	}
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
	var got Cart
	var ok bool
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if got, ok = carts.Get(id); ok {
			break
		}
	}
	if !ok || got.Total != 3 {
		t.Fatalf("after recovery: %+v %v (%v)", got, ok, carts.Err())
	}
	before := len(f.seen())
	if _, ok := carts.Get(other); ok {
		t.Fatal("the put without quorum was applied")
	}
	fresh := carts.Mint(Cart{Total: 5}, 0)
	if v, ok := carts.Get(fresh); fresh == "" || !ok || v.Total != 5 {
		t.Fatalf("mint and get after recovery: %q %+v %v (%v)", fresh, v, ok, carts.Err())
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
	for _, bad := range []struct{ store, prefix string }{{"", ""}, {"has/slash", ""}, {"cart", "bad prefix"}} {
		if _, err := hsmcpkit.New[int](client, bad.store, hsmcpkit.Options{Prefix: bad.prefix}); !errors.Is(err, handlestore.ErrInvalidArgument) {
			t.Errorf("New(%q, %q): %v", bad.store, bad.prefix, err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewHandleStore(%q, %q) did not panic", bad.store, bad.prefix)
				}
			}()
			hsmcpkit.NewHandleStore[int](client, bad.store, hsmcpkit.Options{Prefix: bad.prefix})
		}()
	}
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
	defer s.Close()
	start := time.Now()
	if _, ok := s.Get(handlestore.NewHandleID("")); ok {
		t.Fatal("a handle without a cluster")
	}
	if took := time.Since(start); took < hsmcpkit.DefaultTimeout*3/5 || took > hsmcpkit.DefaultTimeout+2*time.Second {
		t.Fatalf("took %v, want about %v", took, hsmcpkit.DefaultTimeout)
	}
	if !errors.Is(s.Err(), context.DeadlineExceeded) || len(f.seen()) != 1 {
		t.Fatalf("recorded %v, hook saw %v", s.Err(), f.seen())
	}
	// Close ends a call in flight at once.
	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		s.Mint(1, 0)
		done <- time.Since(start)
	}()
	time.Sleep(200 * time.Millisecond)
	s.Close()
	if took := <-done; took > 2*time.Second {
		t.Fatalf("a call in flight ended %v after its start, not at Close", took)
	}
	if !errors.Is(s.Err(), context.Canceled) && !errors.Is(s.Err(), handlestore.ErrClosed) {
		t.Fatalf("recorded %v", s.Err())
	}
}
