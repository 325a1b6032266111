package handlestore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	handlestore "github.com/handlestore/handlestore/client/go"
	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// The examples that need a cluster name it in the environment
// (HANDLESTORE_ENDPOINTS, HANDLESTORE_NAMESPACE): they have no Output
// line, so go test compiles them without running them, and
// TestExamplesOnACluster (cluster_examples_test.go) runs them against a
// test cluster and checks what they print. A failure panics there, which
// that test reports; a program would handle it.

type Cart struct {
	Items []string `json:"items"`
}

// A store of carts, a handle per cart: minted by one server replica,
// updated and read by any other.
func Example() {
	cfg, err := handlestore.FromEnv() // HANDLESTORE_ENDPOINTS, _NAMESPACE, _CACERT, _CERT, _KEY, _TOKEN, _TOKEN_FILE
	if err != nil {
		panic(err)
	}
	client, err := handlestore.New(cfg)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	carts, err := handlestore.NewHandleStore[Cart](client, "cart",
		handlestore.HandleStoreOptions{Prefix: "cart", DefaultTTL: time.Hour})
	if err != nil {
		panic(err)
	}
	id, err := carts.Mint(ctx, Cart{}, handlestore.TTLDefault) // > 0 that TTL, 0 the default, < 0 never
	if err != nil {
		panic(err)
	}
	// A compare-and-set loop: no update is lost to a concurrent one.
	_, _, err = carts.Update(ctx, id, func(c Cart) (Cart, error) {
		c.Items = append(c.Items, "sku-1")
		return c, nil
	})
	if err != nil {
		panic(err)
	}
	cart, ok, err := carts.Get(ctx, id) // from any node
	if err != nil {
		panic(err)
	}
	fmt.Println(ok, cart.Items)

	_, ok, err = carts.Get(ctx, handlestore.NewHandleID("cart"))
	fmt.Println(ok, err)
}

// Generated stubs on Conn reach the calls the typed API lacks (here an
// operator's) with the client's leader following and retries.
func ExampleClient_Conn() {
	cfg, err := handlestore.FromEnv()
	if err != nil {
		panic(err)
	}
	client, err := handlestore.New(cfg)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	status, err := pb.NewAdminClient(client.Conn()).Status(ctx, &pb.StatusRequest{})
	if err != nil {
		panic(err)
	}
	fmt.Println("the cluster has a leader:", status.GetLeaderId() != 0)

	// A write through Conn carries a write id, so that a retry applies once.
	id, release := client.NewWriteID()
	defer release()
	_, err = pb.NewStateClient(client.Conn()).Store(ctx, &pb.StoreRequest{
		Namespace: client.Namespace(), Key: "greeting",
		Value:   &pb.StateValue{Kind: &pb.StateValue_Json{Json: `"hello"`}},
		WriteId: id,
	})
	if err != nil {
		panic(err)
	}
	var greeting string
	if _, err := client.StateTool(handlestore.StateToolOptions{}).Get(ctx, "greeting", &greeting); err != nil {
		panic(err)
	}
	fmt.Println(greeting)
}

// A compare-and-set: the second create-only store of a key loses, and says
// where the key is.
func ExampleIfRevision() {
	cfg, err := handlestore.FromEnv()
	if err != nil {
		panic(err)
	}
	client, err := handlestore.New(cfg)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	tool := client.StateTool(handlestore.StateToolOptions{})
	rev, err := tool.Store(ctx, "leases/job-7", "worker-a", handlestore.IfRevision(0), handlestore.TTL(time.Minute))
	if err != nil {
		panic(err)
	}
	_, err = tool.Store(ctx, "leases/job-7", "worker-b", handlestore.IfRevision(0))
	var e *handlestore.Error
	if errors.As(err, &e) && errors.Is(err, handlestore.ErrRevisionMismatch) {
		fmt.Println("taken, at the first store's revision:", e.CurrentRevision == rev)
	}
	// Released only by its holder, at the revision it stored.
	d, err := tool.Delete(ctx, "leases/job-7", handlestore.IfRevision(rev))
	if err != nil {
		panic(err)
	}
	fmt.Println("released:", d.Count)
}

// Outcome gives the revision of a HandleStore's Put, whose result is
// mcpkit's bool: here for a read on any node that sees the write.
func ExampleOutcome() {
	cfg, err := handlestore.FromEnv()
	if err != nil {
		panic(err)
	}
	client, err := handlestore.New(cfg)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	carts, err := handlestore.NewHandleStore[Cart](client, "cart", handlestore.HandleStoreOptions{})
	if err != nil {
		panic(err)
	}
	id := handlestore.NewHandleID("")
	var out handlestore.WriteOutcome
	if _, err := carts.Put(ctx, id, Cart{Items: []string{"sku-2"}}, handlestore.TTLDefault, handlestore.Outcome(&out)); err != nil {
		panic(err)
	}
	cart, _, err := carts.WithConsistency(handlestore.AtLeast(out.Revision)).Get(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Existed, cart.Items)
}

func ExampleNewHandleID() {
	id := handlestore.NewHandleID("cart")
	fmt.Println(strings.HasPrefix(id, "cart-"), handlestore.CheckHandleID(id) == nil)
	// Output: true true
}

func ExampleCheckKey() {
	for _, key := range []string{"checkpoints/agent-7/latest", "a//b", "/a"} {
		fmt.Println(key, handlestore.CheckKey(key) == nil)
	}
	// Output:
	// checkpoints/agent-7/latest true
	// a//b false
	// /a false
}

// An error carries the node's reason; errors.Is matches it against the
// error values of the table, errors.As gives its details.
func ExampleError() {
	// As a compare-and-set that lost would fail:
	var err error = &handlestore.Error{Reason: handlestore.ReasonRevisionMismatch, Code: codes.FailedPrecondition, CurrentRevision: 42}
	err = fmt.Errorf("saving the cart: %w", err)

	fmt.Println(errors.Is(err, handlestore.ErrRevisionMismatch), errors.Is(err, handlestore.ErrNotFound))
	var e *handlestore.Error
	if errors.As(err, &e) {
		fmt.Println(e.Reason, e.Code, e.CurrentRevision)
	}
	// Output:
	// true false
	// revision_mismatch FailedPrecondition 42
}
