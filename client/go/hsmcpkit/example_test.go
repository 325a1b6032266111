package hsmcpkit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/hsmcpkit"
	"github.com/handlestore/handlestore/client/go/hsmcpkit/internal/mcpkit"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// Cart tools in the pattern of mcpkit's stateless example
// (examples/stateless/main.go at v0.5.2, SEP-2567), written here for the
// tests: create_cart mints a cart and answers its id, which the client
// passes to the other tools; add_item reads the cart, adds to it, writes
// it back ignoring Put's bool and answers success; checkout reads it,
// deletes it ignoring Delete's bool and answers an order. They are
// written against mcpkit's HandleStore[Cart], so the swap changes none
// of them.

type Cart struct {
	Items []CartItem `json:"items"`
	Total float64    `json:"total"`
}

type CartItem struct {
	SKU      string  `json:"sku"`
	Quantity int     `json:"quantity"`
	Price    float64 `json:"price"`
}

// catalog is each SKU's unit price.
var catalog = map[string]float64{"apple": 0.5, "bread": 2.5, "coffee": 4}

type cartTools struct{ carts mcpkit.HandleStore[Cart] }

type addItemInput struct {
	CartID   string `json:"cart_id"`
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

type checkoutInput struct {
	CartID string `json:"cart_id"`
}

// errNoCart is a tool's answer for a cart_id the store does not have.
var errNoCart = errors.New("no such cart")

// reply is a tool result carrying out both as JSON text and as structure.
func reply(out map[string]any) mcpkit.ToolResult {
	text, _ := json.Marshal(out)
	return mcpkit.ToolResult{Content: []mcpkit.Content{{Type: "text", Text: string(text)}}, StructuredContent: out}
}

func (c cartTools) createCart(struct{}) (mcpkit.ToolResult, error) {
	return reply(map[string]any{"cart_id": c.carts.Mint(Cart{}, 0)}), nil
}

func (c cartTools) addItem(in addItemInput) (mcpkit.ToolResult, error) {
	cart, found := c.carts.Get(in.CartID)
	if !found {
		return mcpkit.ToolResult{}, fmt.Errorf("%w: %s", errNoCart, in.CartID)
	}
	price, listed := catalog[in.SKU]
	if !listed {
		return mcpkit.ToolResult{}, fmt.Errorf("%q is not in the catalog", in.SKU)
	}
	cart.Items = append(cart.Items, CartItem{SKU: in.SKU, Quantity: in.Quantity, Price: price})
	cart.Total += float64(in.Quantity) * price
	c.carts.Put(in.CartID, cart, 0) // the same id: the client's cart_id stays valid
	return reply(map[string]any{"cart_id": in.CartID, "items": len(cart.Items), "total": cart.Total}), nil
}

func (c cartTools) checkout(in checkoutInput) (mcpkit.ToolResult, error) {
	cart, found := c.carts.Get(in.CartID)
	if !found {
		return mcpkit.ToolResult{}, fmt.Errorf("%w: %s", errNoCart, in.CartID)
	}
	c.carts.Delete(in.CartID)
	return reply(map[string]any{"order_id": handlestore.NewHandleID("order"), "items": len(cart.Items), "total": cart.Total}), nil
}

// told is what a tools/call's client is told: the structured result, a
// tool error (isError) or a JSON-RPC error.
type told struct {
	out      map[string]any
	toolErr  string
	rpcError *mcpkit.Error
}

func (r told) ok() bool { return r.out != nil && r.toolErr == "" && r.rpcError == nil }

func (r told) String() string {
	switch {
	case r.rpcError != nil:
		return fmt.Sprintf("JSON-RPC error %d %q", r.rpcError.Code, r.rpcError.Message)
	case r.toolErr != "":
		return "tool error " + r.toolErr
	}
	return fmt.Sprint(r.out)
}

// call runs a tool as mcpkit's dispatcher does, and gives what the client
// reads from the JSON-RPC response.
func call[In any](name string, handler func(In) (mcpkit.ToolResult, error), args In) told {
	raw, err := json.Marshal(mcpkit.CallTool(name, handler, args))
	if err != nil {
		panic(err)
	}
	var resp mcpkit.Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		panic(err)
	}
	switch {
	case resp.Error != nil:
		return told{rpcError: resp.Error}
	case resp.Result.IsError:
		return told{toolErr: resp.Result.Content[0].Text}
	}
	return told{out: resp.Result.StructuredContent}
}

// An mcpkit server's one-line swap: its carts are then the cluster's, on
// every replica (HANDLESTORE_ENDPOINTS names it).
func ExampleNewHandleStoreFromEnv() {
	// Was: carts := server.NewHandleStore[Cart](server.WithHandleIDPrefix("cart"), server.WithHandleDefaultTTL(time.Hour))
	carts := hsmcpkit.NewHandleStoreFromEnv[Cart]("cart", hsmcpkit.WithHandleIDPrefix("cart"), hsmcpkit.WithHandleDefaultTTL(time.Hour))
	defer carts.Close()

	// A call that fails panics; mcpkit's dispatcher tells the client so.
	id := carts.Mint(Cart{}, 0)
	fmt.Println(id[:5])
}

// TestCartToolsAcrossReplicas runs the cart tools with each call on
// another replica (its own client and store, starting at another node),
// and the node leading the cluster killed in the middle of the flow.
func TestCartToolsAcrossReplicas(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	var replicas []cartTools
	endpoints := cluster.Endpoints()
	for i := range endpoints {
		rotated := append(append([]string{}, endpoints[i:]...), endpoints[:i]...)
		c := cluster.Client(handlestore.Config{Namespace: "go-mcpkit-cart", Endpoints: rotated})
		carts := hsmcpkit.NewHandleStore[Cart](c, "cart", hsmcpkit.Options{Prefix: "cart", DefaultTTL: time.Hour}) // the default 5 s per call
		replicas = append(replicas, cartTools{carts})
	}
	at := func(i int) cartTools { return replicas[i%len(replicas)] }

	created := call("create_cart", at(0).createCart, struct{}{})
	id, _ := created.out["cart_id"].(string)
	if !created.ok() || !mintedID.MatchString(id) {
		t.Fatalf("create_cart: %v", created)
	}
	if r := call("add_item", at(1).addItem, addItemInput{id, "apple", 4}); !r.ok() {
		t.Fatal(r)
	}
	// The leader dies (SIGKILL): the cart, and the flow, go on.
	cluster.Kill(cluster.WaitLeader(10 * time.Second))
	if r := call("add_item", at(2).addItem, addItemInput{id, "coffee", 1}); !r.ok() || r.out["items"] != 2.0 || r.out["total"] != 6.0 {
		t.Fatalf("add_item after the leader died: %v", r)
	}
	r := call("checkout", at(3).checkout, checkoutInput{id})
	if !r.ok() || r.out["items"] != 2.0 || r.out["total"] != 6.0 {
		t.Fatalf("checkout: %v", r)
	}
	for i := range replicas {
		if r := call("checkout", at(i).checkout, checkoutInput{id}); r.toolErr != `tool "checkout": no such cart: `+id {
			t.Fatalf("replica %d, a second checkout: %v", i, r)
		}
	}
	if r := call("add_item", at(0).addItem, addItemInput{"cart-not-a-real-id", "apple", 1}); r.toolErr == "" {
		t.Fatalf("added to a made-up cart: %v", r)
	}

	// With the cluster gone, create_cart fails, within the store's
	// timeout: never a cart id nobody can find.
	cluster.Stop()
	if r := call("create_cart", at(0).createCart, struct{}{}); r.rpcError == nil || r.rpcError.Code != mcpkit.ErrCodeInternal {
		t.Fatalf("create_cart without a cluster: %v", r)
	}
}
