package hsmcpkit_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/hsmcpkit"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// The gist of mcpkit's stateless example (examples/stateless/main.go,
// SEP-2567): cart tools that thread a minted cart_id through their
// arguments, written against mcpkit's HandleStore[Cart] and unchanged by
// the swap, except that a failed Mint ("") and a failed Get are told
// from an unknown cart by the store's Err.

type Cart struct {
	Items []CartItem `json:"items"`
	Total float64    `json:"total"`
}

type CartItem struct {
	SKU      string  `json:"sku"`
	Quantity int     `json:"quantity"`
	Price    float64 `json:"price"`
}

var prices = map[string]float64{"apple": 0.50, "bread": 2.50, "coffee": 4.00}

// storeErr is the store's recorded error, if it records them (mcpkit's
// in-memory store has none).
func storeErr(carts mcpkitHandleStore[Cart]) error {
	if s, ok := carts.(interface{ Err() error }); ok {
		return s.Err()
	}
	return nil
}

func createCart(carts mcpkitHandleStore[Cart]) (string, error) {
	id := carts.Mint(Cart{}, 0)
	if id == "" {
		return "", fmt.Errorf("the cart could not be stored: %w", storeErr(carts))
	}
	return id, nil
}

func addItem(carts mcpkitHandleStore[Cart], cartID, sku string, quantity int) (Cart, error) {
	cart, ok := carts.Get(cartID)
	if !ok {
		return Cart{}, fmt.Errorf("unknown cart_id: %s", cartID)
	}
	price, known := prices[sku]
	if !known {
		return Cart{}, fmt.Errorf("unknown sku: %s", sku)
	}
	cart.Items = append(cart.Items, CartItem{SKU: sku, Quantity: quantity, Price: price})
	cart.Total += price * float64(quantity)
	carts.Put(cartID, cart, 0) // in place: the cart_id stays the client's handle
	return cart, nil
}

func checkout(carts mcpkitHandleStore[Cart], cartID string) (Cart, error) {
	cart, ok := carts.Get(cartID)
	if !ok {
		return Cart{}, fmt.Errorf("unknown cart_id: %s", cartID)
	}
	carts.Delete(cartID)
	return cart, nil
}

// An mcpkit server's one-line swap: its carts are then the cluster's, on
// every replica.
func ExampleNewHandleStore() {
	client, err := handlestore.New(handlestore.Config{Endpoints: []string{os.Getenv("HANDLESTORE_ENDPOINTS")}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Was: carts := server.NewHandleStore[Cart](server.WithHandleIDPrefix("cart"), server.WithHandleDefaultTTL(time.Hour))
	carts := hsmcpkit.NewHandleStore[Cart](client, "cart", hsmcpkit.Options{Prefix: "cart", DefaultTTL: time.Hour})
	defer carts.Close()

	id := carts.Mint(Cart{}, 0)
	if id == "" {
		log.Printf("create_cart failed: %v", carts.Err()) // a failed Mint gives ""
		return
	}
	fmt.Println(id[:5])
}

// TestCartToolsAcrossReplicas runs the cart tools with each call on
// another replica (its own client and store, starting at another node),
// and the node leading the cluster killed in the middle of the flow.
func TestCartToolsAcrossReplicas(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	var replicas []mcpkitHandleStore[Cart]
	endpoints := cluster.Endpoints()
	for i := range endpoints {
		rotated := append(append([]string{}, endpoints[i:]...), endpoints[:i]...)
		c := cluster.Client(handlestore.Config{Namespace: "go-mcpkit-cart", Endpoints: rotated})
		carts := hsmcpkit.NewHandleStore[Cart](c, "cart", hsmcpkit.Options{Prefix: "cart", DefaultTTL: time.Hour}) // the default 5 s per call
		t.Cleanup(carts.Close)
		replicas = append(replicas, carts)
	}
	at := func(i int) mcpkitHandleStore[Cart] { return replicas[i%len(replicas)] }

	id, err := createCart(at(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := addItem(at(1), id, "apple", 4); err != nil {
		t.Fatal(err)
	}
	// The leader dies (SIGKILL): the cart, and the flow, go on.
	cluster.Kill(cluster.WaitLeader(10 * time.Second))
	if cart, err := addItem(at(2), id, "coffee", 1); err != nil || len(cart.Items) != 2 || cart.Total != 6 {
		t.Fatalf("%+v %v (recorded: %v)", cart, err, storeErr(at(2)))
	}
	cart, err := checkout(at(3), id)
	if err != nil || len(cart.Items) != 2 || cart.Total != 6 || cart.Items[0].SKU != "apple" {
		t.Fatalf("checkout: %+v %v", cart, err)
	}
	for i := range replicas {
		if _, err := checkout(at(i), id); err == nil {
			t.Fatalf("replica %d checked out a cart twice", i)
		}
		if err := storeErr(at(i)); err != nil {
			t.Fatalf("replica %d recorded %v", i, err)
		}
	}
	if _, err := addItem(at(0), "cart-not-a-real-id", "apple", 1); err == nil {
		t.Fatal("added to a made-up cart")
	}

	// With the cluster gone, create_cart fails, saying why, within the
	// store's timeout: never a cart id nobody can find.
	cluster.Stop()
	start := time.Now()
	if _, err := createCart(at(0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("create_cart without a cluster: %v", err)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("took %v (timeout 5 s)", took)
	}
}
