package handlestore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

func TestStateToolOnACluster(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	client := cluster.Client(handlestore.Config{Namespace: "go-state"})
	tool := client.StateTool(handlestore.StateToolOptions{})

	t.Run("JSON and bytes come back as they went", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		rev := got(tool.Store(ctx, "a/json", map[string]any{"step": 3}))(t)
		got(tool.Store(ctx, "a/bytes", []byte{0, 1, 2}))(t)
		e := got(tool.Retrieve(ctx, "a/json"))(t)
		if e == nil || e.ModRevision != rev || string(e.Value.JSON()) != `{"step":3}` {
			t.Fatalf("%+v", e)
		}
		b := got(tool.Retrieve(ctx, "a/bytes"))(t)
		if b == nil || !b.Value.IsBytes() || !slices.Equal(b.Value.Bytes(), []byte{0, 1, 2}) {
			t.Fatalf("%+v", b)
		}
		if e := got(tool.Retrieve(ctx, "a/none"))(t); e != nil {
			t.Fatalf("absent key: %+v", e)
		}
		if !got(tool.Exists(ctx, "a/json"))(t) || got(tool.Exists(ctx, "a/none"))(t) {
			t.Fatal("exists")
		}
	})

	t.Run("compare-and-set and deletes", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		rev := got(tool.Store(ctx, "cas/k", 1, handlestore.IfRevision(0)))(t)
		_, err := tool.Store(ctx, "cas/k", 2, handlestore.IfRevision(0))
		if !errors.Is(err, handlestore.ErrRevisionMismatch) {
			t.Fatalf("create-only over a live key: %v", err)
		}
		if _, err := tool.Delete(ctx, "cas/k", handlestore.IfRevision(rev+100)); !errors.Is(err, handlestore.ErrRevisionMismatch) {
			t.Fatalf("delete at a wrong revision: %v", err)
		}
		if d := got(tool.Delete(ctx, "cas/k", handlestore.IfRevision(rev)))(t); d.Count != 1 {
			t.Fatalf("%+v", d)
		}
		for i := range 5 {
			got(tool.Store(ctx, fmt.Sprintf("gone/%d", i), i))(t)
		}
		if d := got(tool.DeletePrefix(ctx, "gone/", 3))(t); d.Count != 3 || !d.More {
			t.Fatalf("%+v", d)
		}
		if d := got(tool.DeletePrefix(ctx, "gone/", 0))(t); d.Count != 2 || d.More {
			t.Fatalf("%+v", d)
		}
	})

	t.Run("paged list and scan in key order", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		var items []handlestore.StoreItem
		for i := range 25 {
			items = append(items, handlestore.StoreItem{Key: fmt.Sprintf("list/%02d", i), Value: i})
		}
		got(tool.BatchStore(ctx, items))(t)
		page := got(tool.List(ctx, "list/", handlestore.ListOptions{Limit: 10, WithValues: true}))(t)
		if len(page.Entries) != 10 || page.NextPageToken == "" || page.Entries[0].Key != "list/00" || page.Entries[0].Value.IsZero() {
			t.Fatalf("%+v", page)
		}
		var keys []string
		for e, err := range tool.Scan(ctx, "list/", handlestore.ListOptions{Limit: 10}) {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, e.Key)
		}
		if len(keys) != 25 || !slices.IsSorted(keys) {
			t.Fatalf("%v", keys)
		}
	})

	t.Run("batches are atomic", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		got(tool.Store(ctx, "b/taken", 0))(t)
		_, err := tool.BatchStore(ctx, []handlestore.StoreItem{
			{Key: "b/new", Value: 1}, {Key: "b/taken", Value: 2, If: handlestore.IfRevision(0)},
		})
		if !errors.Is(err, handlestore.ErrRevisionMismatch) {
			t.Fatalf("got %v", err)
		}
		entries := got(tool.BatchRetrieve(ctx, []string{"b/new", "b/taken"}))(t)
		if len(entries) != 2 || entries[0] != nil || entries[1] == nil {
			t.Fatalf("a failed batch wrote something: %+v", entries)
		}
	})

	t.Run("the key ring seals request state every replica opens", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		if _, err := handlestore.RequestStateCodecFromCluster(ctx, client, handlestore.SealSigned, 0); !errors.Is(err, handlestore.ErrNotFound) {
			t.Fatalf("no ring yet: %v", err)
		}
		got(client.KeyringRotate(ctx, true))(t)
		a := got(handlestore.RequestStateCodecFromCluster(ctx, client, handlestore.SealEncrypted, 0))(t)
		b := got(handlestore.RequestStateCodecFromCluster(ctx, cluster.Client(handlestore.Config{Namespace: "go-state"}), handlestore.SealEncrypted, 0))(t)
		blob := got(a.Encode(ctx, map[string]int{"step": 2}, "user-1", handlestore.SealOptions{Tool: "checkout"}))(t)
		var state map[string]int
		if ok, err := b.DecodeInto(ctx, blob, "user-1", "checkout", &state); !ok || err != nil || state["step"] != 2 {
			t.Fatalf("%v %v %v", state, ok, err)
		}
		if _, ok := b.Decode(ctx, blob, "user-2", "checkout"); ok {
			t.Fatal("opened for another subject")
		}
	})

	t.Run("the client state store keeps the token encrypted", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		store := got(handlestore.ClientStateStoreFromCluster(ctx, client, "host-a"))(t)
		if err := store.SetSessionID(ctx, "sess-1"); err != nil {
			t.Fatal(err)
		}
		if err := store.SetAccessToken(ctx, "hunter2"); err != nil {
			t.Fatal(err)
		}
		raw := got(tool.Retrieve(ctx, "mcp-clients/host-a/access-token"))(t)
		if raw == nil || strings.Contains(string(raw.Value.JSON()), "hunter2") {
			t.Fatalf("the token is stored in the clear: %+v", raw)
		}
		id, ok := got2(store.SessionID(ctx))(t)
		token, tok := got2(store.AccessToken(ctx))(t)
		if id != "sess-1" || !ok || token != "hunter2" || !tok {
			t.Fatalf("%q %v %q %v", id, ok, token, tok)
		}
		if err := store.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := got2(store.SessionID(ctx))(t); ok {
			t.Fatal("cleared, yet a session id")
		}
	})
}
