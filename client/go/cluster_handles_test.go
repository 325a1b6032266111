package handlestore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

func TestHandlesOnACluster(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	client := cluster.Client(handlestore.Config{Namespace: "go-handles"})

	t.Run("minted on one node, read from every node", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		carts := handleStore[cart](t, client, "cart", handlestore.HandleStoreOptions{Prefix: "cart"})
		id := got(carts.Mint(ctx, cart{Items: []string{"sku-1"}}, handlestore.TTLDefault))(t)
		for _, ep := range cluster.Endpoints() {
			one := cluster.Client(handlestore.Config{Namespace: "go-handles", Endpoints: []string{ep}})
			got, ok, err := handleStore[cart](t, one, "cart", handlestore.HandleStoreOptions{}).Get(ctx, id)
			if err != nil || !ok || len(got.Items) != 1 || got.Items[0] != "sku-1" {
				t.Fatalf("%s: %v %v %v", ep, got, ok, err)
			}
		}
		if n := got(carts.Len(ctx))(t); n != 1 {
			t.Fatalf("len %d", n)
		}
	})

	t.Run("an unknown handle is absent, not an error", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		carts := handleStore[cart](t, client, "unknown", handlestore.HandleStoreOptions{})
		id := handlestore.NewHandleID("")
		if _, ok, err := carts.Get(ctx, id); ok || err != nil {
			t.Fatalf("get: %v %v", ok, err)
		}
		if existed, err := carts.Delete(ctx, id); existed || err != nil {
			t.Fatalf("delete: %v %v", existed, err)
		}
		if _, ok, err := carts.Update(ctx, id, func(c cart) (cart, error) { return c, nil }); ok || err != nil {
			t.Fatalf("update: %v %v", ok, err)
		}
		_, err := carts.Put(ctx, id, cart{}, handlestore.TTLDefault, handlestore.IfRevision(5))
		if !errors.Is(err, handlestore.ErrNotFound) {
			t.Fatalf("a compare-and-set of an unknown handle: %v", err)
		}
	})

	t.Run("a compare-and-set that lost carries revision_mismatch and the revision", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		carts := handleStore[cart](t, client, "cas", handlestore.HandleStoreOptions{})
		id := got(carts.Mint(ctx, cart{}, 0))(t)
		v, _ := got2(carts.GetVersioned(ctx, id))(t)
		var now handlestore.WriteOutcome
		if !got(carts.Put(ctx, id, cart{Items: []string{"a"}}, 0, handlestore.IfRevision(v.ModRevision), handlestore.Outcome(&now)))(t) || !now.Existed {
			t.Fatalf("a compare-and-set over a live handle: %+v", now)
		}
		if w, _ := got2(carts.GetVersioned(ctx, id))(t); w.ModRevision != now.Revision {
			t.Fatalf("the outcome's revision %d, the handle's %d", now.Revision, w.ModRevision)
		}
		_, err := carts.Put(ctx, id, cart{Items: []string{"b"}}, 0, handlestore.IfRevision(v.ModRevision))
		var e *handlestore.Error
		if !errors.As(err, &e) || !errors.Is(err, handlestore.ErrRevisionMismatch) || e.Code != codes.FailedPrecondition || e.CurrentRevision != now.Revision || e.Message == "" {
			t.Fatalf("got %#v", err)
		}
		_, err = carts.MintWithID(ctx, id, cart{}, 0)
		if !errors.As(err, &e) || e.Reason != handlestore.ReasonAlreadyExists || e.Code != codes.AlreadyExists {
			t.Fatalf("a second mint of a live id: %#v", err)
		}
	})

	t.Run("concurrent updates lose nothing", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		carts := handleStore[cart](t, client, "update", handlestore.HandleStoreOptions{})
		id := got(carts.Mint(ctx, cart{}, time.Hour))(t)
		var wg sync.WaitGroup
		for w := range 4 {
			other := cluster.Client(handlestore.Config{Namespace: "go-handles"})
			store := handleStore[cart](t, other, "update", handlestore.HandleStoreOptions{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					_, _, err := store.Update(ctx, id, func(c cart) (cart, error) {
						c.Items = append(c.Items, fmt.Sprintf("%d-%d", w, i))
						return c, nil
					})
					if err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		got, _ := got2(carts.GetVersioned(ctx, id))(t)
		if len(got.Value.Items) != 20 || got.ExpiresAt.IsZero() {
			t.Fatalf("%d items (want 20), expires %v (kept)", len(got.Value.Items), got.ExpiresAt)
		}
	})

	t.Run("concurrent writes and reads share Submit calls", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		c := cluster.Client(handlestore.Config{Namespace: "go-handles", MaxWriteCalls: 1, MaxReadCalls: 1})
		store := handleStore[int](t, c, "shared", handlestore.HandleStoreOptions{})
		ids := make([]string, 64)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, err := store.Mint(ctx, i, 0)
				if err != nil {
					t.Error(err)
				}
				ids[i] = id
			}()
		}
		wg.Wait()
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if v, ok, err := store.Get(ctx, id); v != i || !ok || err != nil {
					t.Errorf("%s: %v %v %v", id, v, ok, err)
				}
			}()
		}
		wg.Wait()
		if w, r := c.WriteStats(), c.ReadStats(); w.Calls >= w.Sent || r.Calls >= r.Sent {
			t.Fatalf("writes %+v, reads %+v: not coalesced", w, r)
		}
	})

	t.Run("TTL: > 0 expires, 0 the default, < 0 never", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		short := handleStore[int](t, client, "ttl", handlestore.HandleStoreOptions{DefaultTTL: 400 * time.Millisecond})
		plain := handleStore[int](t, client, "ttl-plain", handlestore.HandleStoreOptions{})
		own := got(short.Mint(ctx, 1, 300*time.Millisecond))(t)
		byDefault := got(short.Mint(ctx, 2, handlestore.TTLDefault))(t)
		never := got(short.Mint(ctx, 3, handlestore.TTLNever))(t)
		noDefault := got(plain.Mint(ctx, 4, handlestore.TTLDefault))(t)
		if v, _ := got2(short.GetVersioned(ctx, never))(t); !v.ExpiresAt.IsZero() {
			t.Fatalf("a never TTL expires at %v", v.ExpiresAt)
		}
		time.Sleep(1500 * time.Millisecond)
		for id, live := range map[string]bool{own: false, byDefault: false, never: true} {
			if _, ok, err := short.Get(ctx, id); ok != live || err != nil {
				t.Errorf("%s: live %v (%v), want %v", id, ok, err, live)
			}
		}
		if _, ok, _ := plain.Get(ctx, noDefault); !ok {
			t.Error("TTLDefault without a default expired")
		}
		if n := got(short.Len(ctx))(t); n != 1 {
			t.Errorf("len %d counts expired handles", n)
		}
	})
}
