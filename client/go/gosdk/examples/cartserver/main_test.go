package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// TestMain says once, in any output mode, why the cluster tests skip.
func TestMain(m *testing.M) { testkit.Main(m, "the Go cart server's cluster test") }

type caller struct {
	t  *testing.T // for ok and refused, on the test's goroutine
	cs []*mcp.ClientSession
	mu sync.Mutex
	n  int
}

// try sends each call to the next replica's client, as a round-robin load
// balancer would, and gives the structured answer of a call that did not
// fail.
func (c *caller) try(ctx context.Context, name string, args map[string]any) (map[string]any, *mcp.CallToolResult, error) {
	c.mu.Lock()
	cs := c.cs[c.n%len(c.cs)]
	c.n++
	c.mu.Unlock()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		return nil, res, fmt.Errorf("%s: %s", name, text(res))
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text(res)), &out); err != nil {
		return nil, res, err
	}
	return out, res, nil
}

func text(r *mcp.CallToolResult) string { return r.Content[0].(*mcp.TextContent).Text }

func (c *caller) ok(ctx context.Context, name string, args map[string]any) map[string]any {
	c.t.Helper()
	out, _, err := c.try(ctx, name, args)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *caller) refused(ctx context.Context, name string, args map[string]any) string {
	c.t.Helper()
	_, res, err := c.try(ctx, name, args)
	if err == nil || res == nil {
		c.t.Fatalf("%s should be a tool error: %v", name, err)
	}
	return text(res)
}

func TestTheCartServerOnACluster(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := &caller{t: t}
	// Two replicas, each with its own handlestore client.
	for range 2 {
		stores, err := NewStores(c.Client(handlestore.Config{Namespace: "go-cart"}), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(Handler(NewServer(stores)))
		t.Cleanup(srv.Close)
		client := mcp.NewClient(&mcp.Implementation{Name: "cart-test", Version: "0.1.0"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		cl.cs = append(cl.cs, cs)
	}

	id := cl.ok(ctx, "create_cart", map[string]any{})["cart_id"].(string)
	if !regexp.MustCompile(`^cart-[A-Z2-7]{26}$`).MatchString(id) {
		t.Fatalf("cart id %q", id)
	}
	for i := 1; i <= 4; i++ {
		cl.ok(ctx, "add_item", map[string]any{"cart_id": id, "sku": fmt.Sprintf("sku-%d", i), "quantity": i})
	}
	for range 2 {
		cl.ok(ctx, "add_item", map[string]any{"cart_id": id, "sku": "gift", "quantity": 1, "request_id": "r-1"})
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			if _, _, err := cl.try(ctx, "add_item", map[string]any{"cart_id": id, "sku": fmt.Sprintf("c-%d", i), "quantity": 1}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	cart := cl.ok(ctx, "get_cart", map[string]any{"cart_id": id})["cart"].(map[string]any)
	var skus []string
	for _, l := range cart["lines"].([]any) {
		skus = append(skus, l.(map[string]any)["sku"].(string))
	}
	if !slices.Equal(skus[:5], []string{"sku-1", "sku-2", "sku-3", "sku-4", "gift"}) || len(skus) != 11 {
		t.Fatalf("lines %v", skus)
	}

	orders := make([]string, 3)
	for i := range 3 {
		wg.Go(func() {
			out, _, err := cl.try(ctx, "checkout", map[string]any{"cart_id": id})
			if err != nil {
				t.Error(err)
				return
			}
			orders[i], _ = out["order_id"].(string)
		})
	}
	wg.Wait()
	if orders[0] == "" || orders[1] != orders[0] || orders[2] != orders[0] {
		t.Fatalf("orders %v", orders)
	}
	if got := cl.ok(ctx, "checkout", map[string]any{"cart_id": id}); got["order_id"] != orders[0] || got["lines"] != 11.0 {
		t.Fatalf("checkout again: %v", got)
	}
	if msg := cl.refused(ctx, "add_item", map[string]any{"cart_id": id, "sku": "late", "quantity": 1}); !strings.Contains(msg, "already checked out") {
		t.Fatal(msg)
	}
	stores, _ := NewStores(c.Client(handlestore.Config{Namespace: "go-cart"}), time.Hour)
	order, ok, err := stores.Orders.Get(ctx, orders[0])
	if err != nil || !ok || order.CartID != id || len(order.Lines) != 11 {
		t.Fatalf("order %+v %v %v", order, ok, err)
	}
	if n, err := stores.Orders.Len(ctx); err != nil || n != 1 {
		t.Fatalf("%d orders, %v", n, err)
	}

	res, err := cl.cs[0].ReadResource(ctx, &mcp.ReadResourceParams{URI: CartURI + id})
	if err != nil || !strings.Contains(res.Contents[0].Text, `"order_id":"`+orders[0]+`"`) {
		t.Fatalf("resource: %v %v", res, err)
	}
	if _, err := cl.cs[1].ReadResource(ctx, &mcp.ReadResourceParams{URI: CartURI + "nope"}); err == nil {
		t.Fatal("an unknown cart's resource was read")
	}

	for range 2 {
		for _, c := range []struct{ tool, id, want string }{
			{"get_cart", "../etc/passwd", "unknown cart_id: ../etc/passwd"},
			{"get_cart", "cart-AAAAAAAAAAAAAAAAAAAAAAAAAA", "unknown cart_id"},
			{"add_item", "nope", "unknown cart_id: nope"},
		} {
			args := map[string]any{"cart_id": c.id, "sku": "x", "quantity": 1}
			if c.tool == "get_cart" {
				delete(args, "sku")
				delete(args, "quantity")
			}
			if msg := cl.refused(ctx, c.tool, args); !strings.Contains(msg, c.want) {
				t.Errorf("%s %s: %s", c.tool, c.id, msg)
			}
		}
		empty := cl.ok(ctx, "create_cart", map[string]any{})["cart_id"].(string)
		if msg := cl.refused(ctx, "checkout", map[string]any{"cart_id": empty}); !strings.Contains(msg, "is empty") {
			t.Error(msg)
		}
	}
	if msg := cl.refused(ctx, "add_item", map[string]any{"cart_id": id, "sku": "x", "quantity": 0}); !strings.Contains(msg, "quantity") {
		t.Errorf("quantity 0: %s", msg)
	}
}
