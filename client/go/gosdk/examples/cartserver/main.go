// Command cartserver is a stateless MCP cart server on the official Go SDK
// (Streamable HTTP at /mcp, no sessions) whose carts live in handlestore,
// so any number of replicas behind a load balancer share them: the Go twin
// of client/rust/examples/cart_server, client/python/examples/fastmcp_cart.py
// and client/ts/examples/cartServer.ts, with the same tools, the same
// stores (`cart`, prefix `cart`, and `order`) and the same cart JSON, so
// replicas in the four languages serve one another's carts.
//
//	go run ./examples/cartserver --listen 127.0.0.1:8083 \
//	    --endpoints 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403
//
// (or HANDLESTORE_ENDPOINTS, HANDLESTORE_CACERT, HANDLESTORE_TOKEN... as
// handlestore.FromEnv reads them). Tools: create_cart, add_item(cart_id,
// sku, quantity, request_id?), get_cart(cart_id), checkout(cart_id);
// resource cart://<cart_id>. add_item is a compare-and-set update, so
// replicas adding to one cart at once never lose an item; a request_id
// makes a retried add_item a no-op; checkout records one order per cart
// however often, and on whichever replica, it is called.
//
// Prints `listening <port>` once it serves.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// CartURI is the scheme of the cart resources.
const CartURI = "cart://"

// Line is one add_item call's line.
type Line struct {
	SKU      string `json:"sku"`
	Quantity uint32 `json:"quantity"`
	// RequestID is the caller's idempotency key, if it gave one.
	RequestID string `json:"request_id,omitempty"`
}

// Cart is a cart as every twin stores it.
type Cart struct {
	Lines []Line `json:"lines"`
	// OrderID is set once, by the first checkout.
	OrderID string `json:"order_id,omitempty"`
}

// Order is the record a checkout writes.
type Order struct {
	CartID string `json:"cart_id"`
	Lines  []Line `json:"lines"`
}

// Stores are the cart and order stores of the twins.
type Stores struct {
	Carts  *handlestore.HandleStore[Cart]
	Orders *handlestore.HandleStore[Order]
}

// NewStores are the stores in c's namespace, carts kept cartTTL.
func NewStores(c *handlestore.Client, cartTTL time.Duration) (*Stores, error) {
	carts, err := handlestore.NewHandleStore[Cart](c, "cart", handlestore.HandleStoreOptions{Prefix: "cart", DefaultTTL: cartTTL})
	if err != nil {
		return nil, err
	}
	orders, err := handlestore.NewHandleStore[Order](c, "order", handlestore.HandleStoreOptions{})
	if err != nil {
		return nil, err
	}
	return &Stores{Carts: carts, Orders: orders}, nil
}

func structured(v map[string]any) *mcp.CallToolResult {
	text, _ := json.Marshal(v)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: v}
}

func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}, IsError: true}
}

// storeError is what the caller sees of a store failure: a malformed id is
// an unknown cart; anything else may be retried.
func storeError(cartID string, err error) *mcp.CallToolResult {
	if errors.Is(err, handlestore.ErrInvalidArgument) {
		return toolError("unknown cart_id: %s", cartID)
	}
	return toolError("cart store unavailable, retry: %v", err)
}

// shown is a cart as the tools answer it (lines [] rather than null).
func shown(c Cart) Cart {
	if c.Lines == nil {
		c.Lines = []Line{}
	}
	return c
}

// errUnchanged ends an update that has nothing to write.
var errUnchanged = errors.New("unchanged")

// update is HandleStore.Update that writes only what fn changes: fn says
// whether it changed the cart. It gives the cart after, and false if there
// is none.
func (s *Stores) update(ctx context.Context, cartID string, fn func(*Cart) bool) (Cart, bool, error) {
	var seen Cart
	next, ok, err := s.Carts.Update(ctx, cartID, func(c Cart) (Cart, error) {
		c.Lines = slices.Clone(c.Lines)
		seen = c
		if !fn(&c) {
			return c, errUnchanged
		}
		return c, nil
	})
	if errors.Is(err, errUnchanged) {
		return seen, true, nil
	}
	return next, ok, err
}

type noArgs struct{}

type cartArgs struct {
	CartID string `json:"cart_id"`
}

type addArgs struct {
	CartID    string  `json:"cart_id"`
	SKU       string  `json:"sku"`
	Quantity  uint32  `json:"quantity"`
	RequestID *string `json:"request_id,omitempty"`
}

func ptr[T any](v T) *T { return &v }

var (
	cartIDSchema = &jsonschema.Schema{Type: "string", Description: "The id create_cart returned."}
	cartSchema   = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"cart_id": cartIDSchema}, Required: []string{"cart_id"}}
	addSchema    = &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"cart_id":  cartIDSchema,
			"sku":      {Type: "string", MinLength: ptr(1), MaxLength: ptr(128), Description: "Product SKU."},
			"quantity": {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(1<<32 - 1)), Description: "How many (at least 1)."},
			"request_id": {Type: "string",
				Description: "Idempotency key: a retried add_item with the same request_id is not added twice."},
		},
		Required: []string{"cart_id", "sku", "quantity"},
	}
)

// NewServer is the MCP server over the shared stores (one for every
// request: it holds nothing but the stores).
func NewServer(s *Stores) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "handlestore-cart-server", Version: "0.1.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "create_cart", Description: "Create an empty shopping cart and return its cart_id."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			id, err := s.Carts.Mint(ctx, Cart{Lines: []Line{}}, handlestore.TTLDefault)
			if err != nil {
				return toolError("cart store unavailable, retry: %v", err), nil, nil
			}
			return structured(map[string]any{"cart_id": id}), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "add_item", Description: "Add quantity units of a SKU to a cart. Returns the cart.", InputSchema: addSchema},
		func(ctx context.Context, _ *mcp.CallToolRequest, a addArgs) (*mcp.CallToolResult, any, error) {
			return s.addItem(ctx, a), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "get_cart", Description: "Show a cart's lines and, once checked out, its order_id.", InputSchema: cartSchema},
		func(ctx context.Context, _ *mcp.CallToolRequest, a cartArgs) (*mcp.CallToolResult, any, error) {
			cart, ok, err := s.Carts.Get(ctx, a.CartID)
			switch {
			case err != nil:
				return storeError(a.CartID, err), nil, nil
			case !ok:
				return toolError("unknown cart_id: %s", a.CartID), nil, nil
			}
			return structured(map[string]any{"cart_id": a.CartID, "cart": shown(cart)}), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "checkout", Description: "Check a cart out and return its order_id. Calling it again returns the same order_id.", InputSchema: cartSchema},
		func(ctx context.Context, _ *mcp.CallToolRequest, a cartArgs) (*mcp.CallToolResult, any, error) {
			return s.checkout(ctx, a.CartID), nil, nil
		})
	server.AddResourceTemplate(&mcp.ResourceTemplate{Name: "cart", URITemplate: CartURI + "{cart_id}", Description: "A cart, as get_cart shows it.", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			cart, ok, err := s.Carts.Get(ctx, strings.TrimPrefix(uri, CartURI))
			if err != nil || !ok {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			text, _ := json.Marshal(shown(cart))
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(text)}}}, nil
		})
	return server
}

func (s *Stores) addItem(ctx context.Context, a addArgs) *mcp.CallToolResult {
	line := Line{SKU: a.SKU, Quantity: a.Quantity}
	if a.RequestID != nil {
		line.RequestID = *a.RequestID
	}
	cart, ok, err := s.update(ctx, a.CartID, func(c *Cart) bool {
		duplicate := line.RequestID != "" && slices.ContainsFunc(c.Lines, func(l Line) bool { return l.RequestID == line.RequestID })
		if c.OrderID != "" || duplicate {
			return false
		}
		c.Lines = append(c.Lines, line)
		return true
	})
	switch {
	case err != nil:
		return storeError(a.CartID, err)
	case !ok:
		return toolError("unknown cart_id: %s", a.CartID)
	case cart.OrderID != "":
		return toolError("cart %s is already checked out (order %s)", a.CartID, cart.OrderID)
	}
	return structured(map[string]any{"cart_id": a.CartID, "cart": shown(cart)})
}

func (s *Stores) checkout(ctx context.Context, cartID string) *mcp.CallToolResult {
	candidate := handlestore.NewHandleID("order")
	cart, ok, err := s.update(ctx, cartID, func(c *Cart) bool {
		if c.OrderID != "" || len(c.Lines) == 0 {
			return false
		}
		c.OrderID = candidate
		return true
	})
	switch {
	case err != nil:
		return storeError(cartID, err)
	case !ok:
		return toolError("unknown cart_id: %s", cartID)
	case cart.OrderID == "" && len(cart.Lines) == 0:
		return toolError("cart %s is empty", cartID)
	case cart.OrderID == "":
		return toolError("checkout did not record an order; retry")
	}
	// Whichever call recorded the order writes it; a repeat writes the same
	// content again.
	if _, err := s.Orders.Put(ctx, cart.OrderID, Order{CartID: cartID, Lines: shown(cart).Lines}, handlestore.TTLNever); err != nil {
		return storeError(cartID, err)
	}
	return structured(map[string]any{"cart_id": cartID, "order_id": cart.OrderID, "lines": len(cart.Lines)})
}

// Handler serves the stateless Streamable HTTP endpoint at /mcp (JSON
// responses, as the TypeScript twin): every request gets a fresh session
// of server, which holds nothing but the stores.
func Handler(server *mcp.Server) http.Handler {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	return mux
}

// duration is "1h", "30m", "90s", "500ms", or plain seconds.
func duration(text string) (time.Duration, error) {
	if s, err := strconv.ParseFloat(text, 64); err == nil {
		return time.Duration(s * float64(time.Second)), nil
	}
	return time.ParseDuration(text)
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8083", "host:port to serve on (port 0: any)")
	endpoints := flag.String("endpoints", "", "the cluster's nodes, comma-separated (default: HANDLESTORE_ENDPOINTS)")
	namespace := flag.String("namespace", "", "the namespace (default: HANDLESTORE_NAMESPACE, else default)")
	cartTTL := flag.String("cart-ttl", "1h", "how long a cart is kept")
	flag.Parse()
	ttl, err := duration(*cartTTL)
	if err != nil {
		return fmt.Errorf("--cart-ttl: %w", err)
	}
	cfg, err := handlestore.FromEnv()
	if err != nil {
		return err
	}
	if *endpoints != "" {
		cfg.Endpoints = strings.Split(*endpoints, ",")
	}
	if *namespace != "" {
		cfg.Namespace = *namespace
	}
	client, err := handlestore.New(cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	stores, err := NewStores(client, ttl)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("listening %d\n", l.Addr().(*net.TCPAddr).Port)
	srv := &http.Server{Handler: Handler(NewServer(stores)), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(l)
}

func main() {
	if err := run(); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}
