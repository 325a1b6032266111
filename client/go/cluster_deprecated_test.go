package handlestore_test

import (
	"errors"
	"testing"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// The previous release's names (deprecated.go) still do what they did, now
// on top of the per-call options; this file goes with them.
func TestDeprecatedNamesOnACluster(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	client := cluster.Client(handlestore.Config{Namespace: "go-deprecated"})

	t.Run("PutWith and DeleteWith", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		carts := handleStore[cart](t, client, "cart", handlestore.HandleStoreOptions{})
		id := got(carts.Mint(ctx, cart{}, 0))(t)
		v, _ := got2(carts.GetVersioned(ctx, id))(t)
		at := handlestore.Revision(v.ModRevision)
		put := got(carts.PutWith(ctx, id, cart{Items: []string{"a"}}, handlestore.PutOptions{ExpectedRevision: at}))(t)
		if !put.Existed || put.Revision <= v.ModRevision {
			t.Fatalf("%+v after %d", put, v.ModRevision)
		}
		if _, err := carts.PutWith(ctx, id, cart{}, handlestore.PutOptions{ExpectedRevision: at}); !errors.Is(err, handlestore.ErrRevisionMismatch) {
			t.Fatalf("a stale put: %v", err)
		}
		if _, err := carts.DeleteWith(ctx, id, at); !errors.Is(err, handlestore.ErrRevisionMismatch) {
			t.Fatalf("a stale delete: %v", err)
		}
		del := got(carts.DeleteWith(ctx, id, handlestore.Revision(put.Revision)))(t)
		if !del.Existed || del.Revision <= put.Revision {
			t.Fatalf("%+v after %+v", del, put)
		}
	})

	t.Run("StoreOptions and StoreItem.ExpectedRevision", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		tool := client.StateTool(handlestore.StateToolOptions{})
		absent := handlestore.StoreOptions{ExpectedRevision: handlestore.Revision(0)}
		got(tool.Store(ctx, "k", 1, absent))(t)
		if _, err := tool.Store(ctx, "k", 2, absent); !errors.Is(err, handlestore.ErrRevisionMismatch) {
			t.Fatalf("create-only over a live key: %v", err)
		}
		items := []handlestore.StoreItem{{Key: "k", Value: 3, ExpectedRevision: handlestore.Revision(0)}}
		if _, err := tool.BatchStore(ctx, items); !errors.Is(err, handlestore.ErrRevisionMismatch) {
			t.Fatalf("a create-only batch over a live key: %v", err)
		}
	})
}
