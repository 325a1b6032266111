package hsmcpkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/hsmcpkit"
	"github.com/handlestore/handlestore/client/go/hsmcpkit/internal/mcpkit"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// beforePut runs hook (once) as the next Put starts: the fault lands
// between add_item's Get and its Put.
type beforePut struct {
	mcpkit.HandleStore[Cart]
	hook func()
}

func (b *beforePut) Put(id string, v Cart, ttl time.Duration) bool {
	if h := b.hook; h != nil {
		b.hook = nil
		h()
	}
	return b.HandleStore.Put(id, v, ttl)
}

// TestALostPutIsNeverToldAsAdded is issue 100's case: mcpkit's add_item
// (Get, then Put with its bool ignored) while both followers are paused
// and then the leader is killed, so the Put cannot be committed. The
// client must be told the call failed, and, once the cluster is back,
// every item it was told was added must be in the stored cart.
func TestALostPutIsNeverToldAsAdded(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	client := cluster.Client(handlestore.Config{Namespace: "go-mcpkit-lost-put"})
	store := hsmcpkit.NewHandleStore[Cart](client, "cart", hsmcpkit.Options{Prefix: "cart", Timeout: 3 * time.Second})
	faulty := &beforePut{HandleStore: store}
	tools := cartTools{faulty}

	created := call("create_cart", tools.createCart, struct{}{})
	id, _ := created.out["cart_id"].(string)
	if !created.ok() || id == "" {
		t.Fatalf("create_cart: %v", created)
	}
	var added []addedItem
	add := func(sku string) told {
		r := call("add_item", tools.addItem, addItemInput{id, sku, 1})
		if r.ok() {
			added = append(added, addedItem{sku, int(r.out["items"].(float64))})
		}
		return r
	}
	if r := add("apple"); !r.ok() {
		t.Fatalf("add_item before the fault: %v", r)
	}

	leader := cluster.WaitLeader(10 * time.Second)
	killed := make(chan struct{})
	faulty.hook = func() {
		for _, n := range cluster.Nodes {
			if n.ID != leader {
				cluster.Pause(n.ID)
			}
		}
		go func() {
			defer close(killed)
			time.Sleep(300 * time.Millisecond) // the Put is on its way
			cluster.Kill(leader)
		}()
	}
	r := add("coffee")
	<-killed
	if r.rpcError == nil || r.rpcError.Code != mcpkit.ErrCodeInternal {
		t.Errorf("add_item during the fault: told %v, want the JSON-RPC internal error", r)
	}

	// The followers come back and elect a leader of their own (whose log
	// never had the Put), then the old leader rejoins.
	for _, n := range cluster.Nodes {
		cluster.Resume(n.ID)
	}
	cluster.WaitLeader(30 * time.Second)
	cluster.Spawn(leader)
	cluster.WaitLeader(30 * time.Second)

	stored := readBack(t, store.Underlying(), id)
	checkTold(t, "after recovery", stored, added)
	// The same store answers again, and its writes are kept.
	if r := add("bread"); !r.ok() {
		t.Fatalf("add_item after recovery: %v", r)
	}
	checkTold(t, "after one more item", readBack(t, store.Underlying(), id), added)
}

// readBack is the stored cart, once the cluster answers (within 30 s).
func readBack(t *testing.T, s *handlestore.HandleStore[Cart], id string) Cart {
	t.Helper()
	var err error
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var cart Cart
		var ok bool
		cart, ok, err = s.Get(ctx, id)
		cancel()
		if err == nil {
			if !ok {
				t.Fatalf("the cart %s is gone", id)
			}
			return cart
		}
	}
	t.Fatalf("the cluster did not answer: %v", err)
	return Cart{}
}

// addedItem is an add_item the client was told succeeded: the sku, and
// the cart's item count it was told.
type addedItem struct {
	sku   string
	items int
}

// checkTold fails the test if an item the client was told was added is
// not the cart's item at the count it was told. A call told as failed may
// or may not have been applied.
func checkTold(t *testing.T, when string, stored Cart, added []addedItem) {
	t.Helper()
	for _, a := range added {
		if a.items > len(stored.Items) || stored.Items[a.items-1].SKU != a.sku {
			t.Fatalf("%s: the client was told %s was added as item %d; the stored cart is %+v", when, a.sku, a.items, stored.Items)
		}
	}
}

// TestAFailedCallEndsTheStatelessExchange: on mcpkit's stateless wire,
// whose dispatcher does not recover, the store's panic reaches net/http,
// which ends the exchange without a response (and logs the panic, without
// the handle id): the client gets an error, never a result.
func TestAFailedCallEndsTheStatelessExchange(t *testing.T) {
	dead, err := handlestore.New(handlestore.Config{Endpoints: []string{"127.0.0.1:1"}})
	testkit.NoErr(t, err)
	defer dead.Close()
	tools := cartTools{hsmcpkit.NewHandleStore[Cart](dead, "cart", hsmcpkit.Options{Timeout: 300 * time.Millisecond, OnError: func(string, error) {}})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args addItemInput
		_ = json.NewDecoder(r.Body).Decode(&args)
		result, err := tools.addItem(args)
		if err != nil {
			result = mcpkit.ErrorResult(err.Error())
		}
		_ = json.NewEncoder(w).Encode(mcpkit.Response{Result: &result})
	}))
	var logged bytes.Buffer
	srv.Config.ErrorLog = log.New(&logged, "", 0)
	srv.Start()
	defer srv.Close()

	id := handlestore.NewHandleID("cart")
	body, _ := json.Marshal(addItemInput{id, "apple", 1})
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("the client got HTTP %d", resp.StatusCode)
	}
	srv.Close() // waits for the handler, and its log line
	if line := logged.String(); !strings.Contains(line, "hsmcpkit: cart get:") || strings.Contains(line, id) {
		t.Fatalf("net/http logged %q", line)
	}
}
