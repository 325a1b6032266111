package handlestore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// rotated is each endpoint first, the others after it.
func rotated(endpoints []string) [][]string {
	out := make([][]string, len(endpoints))
	for i := range endpoints {
		out[i] = append(append([]string{}, endpoints[i:]...), endpoints[:i]...)
	}
	return out
}

func TestSingleUseOnACluster(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	const ns = "go-single-use"
	client := cluster.Client(handlestore.Config{Namespace: ns})
	got(client.KeyringRotate(testkit.Ctx(t), true))(t)

	t.Run("a token redeems once; another token is its own", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		once := handlestore.NewSingleUse(client)
		for i, want := range []bool{true, false, false} {
			if first := got(once.Redeem(ctx, "token-a", time.Minute))(t); first != want {
				t.Fatalf("redemption %d: %v, want %v", i, first, want)
			}
		}
		if !got(once.Redeem(ctx, "token-b", 0))(t) {
			t.Fatal("token-b was redeemed by token-a")
		}
		// The record is the shared store's handle, under the shared id.
		redeemed := handleStore[bool](t, client, handlestore.RedeemedStore, handlestore.HandleStoreOptions{})
		v, ok := got2(redeemed.GetVersioned(ctx, handlestore.RedeemedID("token-b")))(t)
		if !ok || !v.Value || v.ExpiresAt.IsZero() || time.Until(v.ExpiresAt) > 2*time.Second {
			t.Fatalf("record %+v %v: want true, kept about a second (ttl 0 is at least 1 s)", v, ok)
		}
	})

	t.Run("a blob opens once in the whole cluster, whichever replica tries", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		var replicas []*handlestore.RequestStateCodec
		for _, endpoints := range rotated(cluster.Endpoints()) {
			r := cluster.Client(handlestore.Config{Namespace: ns, Endpoints: endpoints})
			codec := got(handlestore.RequestStateCodecFromCluster(ctx, r, handlestore.SealEncrypted, 0))(t)
			replicas = append(replicas, codec.WithSingleUse(handlestore.NewSingleUse(r)))
		}
		blob := got(replicas[0].Encode(ctx, map[string]int{"step": 2}, "user-1", handlestore.SealOptions{Tool: "checkout", TTL: time.Minute}))(t)
		// Every replica at once: exactly one opens it.
		opened := make([][]byte, len(replicas))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, r := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if s, ok := r.Decode(ctx, blob, "user-1", "checkout"); ok {
					opened[i] = s
				}
			}()
		}
		close(start)
		wg.Wait()
		var n int
		for _, s := range opened {
			if s != nil {
				n++
				if string(s) != `{"step":2}` {
					t.Fatalf("opened %s", s)
				}
			}
		}
		if n != 1 {
			t.Fatalf("%d replicas opened it, want exactly 1", n)
		}
		for i, r := range replicas {
			if s, ok := r.Decode(ctx, blob, "user-1", "checkout"); ok {
				t.Fatalf("replica %d opened it again: %s", i, s)
			}
		}
		// A blob that does not open is not redeemed: its rightful opening still works.
		other := got(replicas[1].Encode(ctx, map[string]int{"step": 3}, "user-1", handlestore.SealOptions{TTL: time.Minute}))(t)
		if _, ok := replicas[2].Decode(ctx, other, "user-2", ""); ok {
			t.Fatal("opened for another subject")
		}
		if s, ok := replicas[2].Decode(ctx, other, "user-1", ""); !ok || string(s) != `{"step":3}` {
			t.Fatalf("the rightful opening: %s %v", s, ok)
		}
		// The record is kept about as long as the blob lives (60 s, plus one).
		redeemed := handleStore[bool](t, client, handlestore.RedeemedStore, handlestore.HandleStoreOptions{})
		v, ok := got2(redeemed.GetVersioned(ctx, handlestore.RedeemedID(blob)))(t)
		if left := time.Until(v.ExpiresAt); !ok || !v.Value || left < 50*time.Second || left > 62*time.Second {
			t.Fatalf("record %+v %v, %v left", v, ok, left)
		}
	})

	t.Run("fails closed: a redemption that cannot be recorded does not open", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		codec := got(handlestore.RequestStateCodecFromCluster(ctx, client, handlestore.SealSigned, 0))(t)
		blob := got(codec.Encode(ctx, map[string]int{"step": 1}, "user-1", handlestore.SealOptions{}))(t)
		// No node answers: the calls end at the client's CallTimeout (the
		// context has no deadline).
		dead := cluster.Client(handlestore.Config{Namespace: ns, Endpoints: []string{"127.0.0.1:1"}, CallTimeout: 300 * time.Millisecond})
		if _, err := handlestore.NewSingleUse(dead).Redeem(context.Background(), blob, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a redemption against no node: %v", err)
		}
		codec.WithSingleUse(handlestore.NewSingleUse(dead))
		start := time.Now()
		if s, ok := codec.Decode(context.Background(), blob, "user-1", ""); ok {
			t.Fatalf("opened without a recorded redemption: %s", s)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("took %v", took)
		}
		// Nothing was recorded: with the cluster it opens, once.
		codec.WithSingleUse(handlestore.NewSingleUse(client))
		if s, ok := codec.Decode(ctx, blob, "user-1", ""); !ok || string(s) != `{"step":1}` {
			t.Fatalf("%s %v", s, ok)
		}
		if _, ok := codec.Decode(ctx, blob, "user-1", ""); ok {
			t.Fatal("opened twice")
		}
	})
}

func TestSingleUseWithoutQuorum(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	const ns = "go-single-use-quorum"
	client := cluster.Client(handlestore.Config{Namespace: ns, CallTimeout: 2 * time.Second})
	ctx := testkit.Ctx(t)
	got(client.KeyringRotate(ctx, true))(t)
	codec := got(handlestore.RequestStateCodecFromCluster(ctx, client, handlestore.SealSigned, 0))(t)
	codec.WithSingleUse(handlestore.NewSingleUse(client))
	blob := got(codec.Encode(ctx, map[string]int{"step": 1}, "user-1", handlestore.SealOptions{}))(t)

	// One node of three left: it answers, but cannot commit a redemption.
	leader := cluster.WaitLeader(10 * time.Second)
	cluster.Kill(leader)
	cluster.Kill(leader%3 + 1)
	start := time.Now()
	if s, ok := codec.Decode(context.Background(), blob, "user-1", ""); ok {
		t.Fatalf("opened without quorum: %s", s)
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("took %v", took)
	}
	for _, n := range cluster.Nodes {
		if !cluster.Running(n.ID) {
			cluster.Spawn(n.ID)
		}
	}
	cluster.WaitLeader(30 * time.Second)
	if s, ok := codec.Decode(ctx, blob, "user-1", ""); !ok || string(s) != `{"step":1}` {
		t.Fatalf("after recovery: %s %v", s, ok)
	}
	if _, ok := codec.Decode(ctx, blob, "user-1", ""); ok {
		t.Fatal("opened twice")
	}
}
