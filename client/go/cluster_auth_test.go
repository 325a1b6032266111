package handlestore_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// An auth-enabled cluster over TLS, tried the way a careless client and
// an attacker would (as client/ts/test/cluster.auth.test.ts): no token, a
// malformed or a forged one, a token used in a namespace or a store it
// was not granted, a read-only token writing, key-ring secrets without
// keyring access, a watch whose grant is revoked, a revoked role and a
// rotated token on every node, a client certificate in place of a token.
// Each refusal is the right error with its reason, comes at once (not
// retried to the deadline), and changes nothing.

const authNS = "go-shop"

var (
	grantWrite = &pb.Permission{Access: pb.Access_ACCESS_WRITE}
	grantRead  = &pb.Permission{Access: pb.Access_ACCESS_READ}
)

// authOf is the Auth service, through c's leader following and retries.
func authOf(c *handlestore.Client) pb.AuthClient { return pb.NewAuthClient(c.Conn()) }

// addUser is a user holding one role of its own name with grants in
// authNS, and its token ("" with noToken).
func addUser(t *testing.T, root *handlestore.Client, name string, noToken bool, grants ...*pb.Permission) string {
	t.Helper()
	got(authOf(root).RoleAdd(testkit.Ctx(t), &pb.RoleAddRequest{Name: name}))(t)
	for _, g := range grants {
		p := &pb.Permission{Namespace: authNS, Access: g.Access, Store: g.Store, KeyPrefix: g.KeyPrefix}
		got(authOf(root).RoleGrant(testkit.Ctx(t), &pb.RolePermissionRequest{Role: name, Permission: p}))(t)
	}
	return got(authOf(root).UserAdd(testkit.Ctx(t), &pb.UserAddRequest{Name: name, Roles: []string{name}, NoToken: noToken}))(t).GetToken()
}

// refused fails the test unless err is want with its reason, and came
// within `within` of start (not retried until the deadline).
func refused(t *testing.T, what string, start time.Time, within time.Duration, err, want error, reason handlestore.Reason) {
	t.Helper()
	t.Logf("%s: %v", what, err)
	var e *handlestore.Error
	if !errors.Is(err, want) || !errors.As(err, &e) || e.Reason != reason {
		t.Fatalf("%s: got %v, want %v (%s)", what, err, want, reason)
	}
	if took := time.Since(start); took > within {
		t.Fatalf("%s: refused after %v: retried until the deadline", what, took)
	}
}

// deny runs call and wants it refused as want/reason within 5 s.
func deny(t *testing.T, what string, want error, reason handlestore.Reason, call func(ctx context.Context) error) {
	t.Helper()
	start := time.Now()
	refused(t, what, start, 5*time.Second, call(testkit.Ctx(t)), want, reason)
}

func unauthenticated(t *testing.T, what string, call func(ctx context.Context) error) {
	t.Helper()
	deny(t, what, handlestore.ErrUnauthenticated, handlestore.ReasonUnauthenticated, call)
}

func denied(t *testing.T, what string, call func(ctx context.Context) error) {
	t.Helper()
	deny(t, what, handlestore.ErrPermissionDenied, handlestore.ReasonPermissionDenied, call)
}

func storeErr(t *handlestore.StateTool, key string, v any) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := t.Store(ctx, key, v)
		return err
	}
}

func getErr(t *handlestore.StateTool, key string) func(context.Context) error {
	return func(ctx context.Context) error {
		var v any
		_, err := t.Get(ctx, key, &v)
		return err
	}
}

func watchErr(c *handlestore.Client, prefix string) func(context.Context) error {
	return func(ctx context.Context) error {
		w, err := c.Watch(ctx, handlestore.WatchPrefix(prefix), handlestore.WatchOptions{})
		if err == nil {
			_ = w.Close()
		}
		return err
	}
}

func mintErr(c *handlestore.Client, store string) func(context.Context) error {
	return func(ctx context.Context) error {
		s, err := handlestore.NewHandleStore[int](c, store, handlestore.HandleStoreOptions{})
		if err != nil {
			return err
		}
		_, err = s.Mint(ctx, 1, 0)
		return err
	}
}

// value is key's value as root reads it (nil if absent).
func value(t *testing.T, root *handlestore.Client, key string) any {
	t.Helper()
	var v any
	if ok := got(root.StateTool(handlestore.StateToolOptions{}).Get(testkit.Ctx(t), key, &v))(t); !ok {
		return nil
	}
	return v
}

func TestAuth(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{TLS: true})
	as := func(token string, namespace string, endpoints ...string) *handlestore.Client {
		return cluster.Client(handlestore.Config{Namespace: namespace, Token: token, Endpoints: endpoints, CallTimeout: 20 * time.Second})
	}
	rootToken := got(authOf(as("", authNS)).AuthEnable(testkit.Ctx(t), &pb.AuthEnableRequest{}))(t).GetRootToken()
	if rootToken == "" {
		t.Fatal("no root token")
	}
	root := as(rootToken, authNS)
	user := func(name string, grants ...*pb.Permission) string { return addUser(t, root, name, false, grants...) }

	t.Run("root's token reads, writes and watches", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		w := got(root.Watch(ctx, handlestore.WatchPrefix("root/"), handlestore.WatchOptions{}))(t)
		defer w.Close()
		tool := root.StateTool(handlestore.StateToolOptions{})
		got(tool.Store(ctx, "root/k", map[string]string{"by": "root"}))(t)
		if v := value(t, root, "root/k"); v.(map[string]any)["by"] != "root" {
			t.Fatalf("%v", v)
		}
		if seen := changes(t, w, 1, 10*time.Second); seen[0].Kind != handlestore.ChangePut || seen[0].Key != "root/k" {
			t.Fatalf("%+v", seen)
		}
		carts := handleStore[cart](t, root, "cart", handlestore.HandleStoreOptions{Prefix: "cart"})
		id := got(carts.Mint(ctx, cart{Items: []string{"a"}}, 0))(t)
		if c, ok := got2(carts.Get(ctx, id))(t); !ok || len(c.Items) != 1 {
			t.Fatalf("%v %v", c, ok)
		}
	})

	t.Run("no token, a malformed one, a forged one: unauthenticated at once, nothing written", func(t *testing.T) {
		forged := rootToken[:len(rootToken)-4] + "AAAA"
		if forged == rootToken {
			forged = rootToken[:len(rootToken)-4] + "BBBB"
		}
		for _, token := range []string{"", "not-a-token", "hs1_x_y", forged} {
			c := as(token, authNS)
			tool := c.StateTool(handlestore.StateToolOptions{})
			unauthenticated(t, "store with "+token, storeErr(tool, "anon/k", 1))
			unauthenticated(t, "get with "+token, getErr(tool, "anon/k"))
			unauthenticated(t, "watch with "+token, watchErr(c, "anon/"))
			unauthenticated(t, "mint with "+token, mintErr(c, "anon"))
		}
		if v := value(t, root, "anon/k"); v != nil {
			t.Fatalf("written: %v", v)
		}
		if n := got(handleStore[int](t, root, "anon", handlestore.HandleStoreOptions{}).Len(testkit.Ctx(t)))(t); n != 0 {
			t.Fatalf("%d handles minted", n)
		}
	})

	t.Run("a token used where it was not granted is denied, and nothing changes", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		bob := user("bob", grantWrite)
		got(as(bob, authNS).StateTool(handlestore.StateToolOptions{}).Store(ctx, "bob/k", "mine"))(t)
		// Another namespace.
		elsewhere := as(bob, "go-other")
		denied(t, "store elsewhere", storeErr(elsewhere.StateTool(handlestore.StateToolOptions{}), "bob/k", "theirs"))
		denied(t, "get elsewhere", getErr(elsewhere.StateTool(handlestore.StateToolOptions{}), "bob/k"))
		denied(t, "watch elsewhere", watchErr(elsewhere, "bob/"))
		if v := value(t, as(rootToken, "go-other"), "bob/k"); v != nil {
			t.Fatalf("written elsewhere: %v", v)
		}
		// The key ring's secrets need keyring access, not write; its ids do not.
		got(root.KeyringRotate(ctx, true))(t)
		denied(t, "a codec from the ring", func(ctx context.Context) error {
			_, err := handlestore.RequestStateCodecFromCluster(ctx, as(bob, authNS), handlestore.SealSigned, 0)
			return err
		})
		denied(t, "the ring's secrets", func(ctx context.Context) error {
			_, err := as(bob, authNS).Keyring(ctx, true)
			return err
		})
		denied(t, "a rotation", func(ctx context.Context) error {
			_, err := as(bob, authNS).KeyringRotate(ctx, false)
			return err
		})
		if keys := got(as(bob, authNS).Keyring(ctx, false))(t); len(keys) != 1 || len(keys[0].Secret) != 0 {
			t.Fatalf("the ring's ids: %+v", keys)
		}
		if keys := got(root.Keyring(ctx, false))(t); len(keys) != 1 {
			t.Fatalf("the ring changed: %+v", keys)
		}
	})

	t.Run("a read-only token reads but cannot write; a grant narrowed to a store covers only that store", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		got(root.StateTool(handlestore.StateToolOptions{}).Store(ctx, "shared/k", "v1"))(t)
		reader := as(user("reader", grantRead), authNS)
		r := reader.StateTool(handlestore.StateToolOptions{})
		var v string
		if ok := got(r.Get(ctx, "shared/k", &v))(t); !ok || v != "v1" {
			t.Fatalf("read %q %v", v, ok)
		}
		denied(t, "a reader's store", storeErr(r, "shared/k", "v2"))
		denied(t, "a reader's prefix delete", func(ctx context.Context) error {
			_, err := r.DeletePrefix(ctx, "shared/", 0)
			return err
		})
		denied(t, "a reader's mint", mintErr(reader, "cart"))

		carter := as(user("carter", &pb.Permission{Access: pb.Access_ACCESS_WRITE, Store: "cart"}), authNS)
		carts := handleStore[int](t, carter, "cart", handlestore.HandleStoreOptions{})
		id := got(carts.Mint(ctx, 2, 0))(t)
		if n, ok := got2(carts.Get(ctx, id))(t); !ok || n != 2 {
			t.Fatalf("%v %v", n, ok)
		}
		denied(t, "a cart grant minting an order", mintErr(carter, "order"))
		denied(t, "a cart grant storing state", storeErr(carter.StateTool(handlestore.StateToolOptions{}), "shared/k", "v3"))
		if v := value(t, root, "shared/k"); v != "v1" {
			t.Fatalf("shared/k is %v", v)
		}
		if n := got(handleStore[int](t, root, "order", handlestore.HandleStoreOptions{}).Len(ctx))(t); n != 0 {
			t.Fatalf("%d orders", n)
		}
	})

	t.Run("a revoked role and a rotated token stop working on every node at once", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		carol := user("carol", grantWrite)
		got(as(carol, authNS).StateTool(handlestore.StateToolOptions{}).Store(ctx, "carol/k", 1))(t)
		got(authOf(root).UserRevokeRole(testkit.Ctx(t), &pb.UserRoleRequest{Name: "carol", Role: "carol"}))(t)
		for _, endpoints := range rotated(cluster.Endpoints()) {
			tool := as(carol, authNS, endpoints...).StateTool(handlestore.StateToolOptions{})
			denied(t, "revoked, from "+endpoints[0], storeErr(tool, "carol/k", 2))
			denied(t, "revoked, read from "+endpoints[0], getErr(tool, "carol/k"))
		}
		got(authOf(root).UserGrantRole(testkit.Ctx(t), &pb.UserRoleRequest{Name: "carol", Role: "carol"}))(t)
		rotatedToken := got(authOf(root).UserTokenRotate(testkit.Ctx(t), &pb.UserTokenRotateRequest{Name: "carol"}))(t).GetToken()
		if rotatedToken == "" || rotatedToken == carol {
			t.Fatal("no new token")
		}
		for _, endpoints := range rotated(cluster.Endpoints()) {
			tool := as(carol, authNS, endpoints...).StateTool(handlestore.StateToolOptions{})
			unauthenticated(t, "the old token, from "+endpoints[0], storeErr(tool, "carol/k", 3))
		}
		if v := value(t, root, "carol/k"); v != float64(1) {
			t.Fatalf("carol/k is %v", v)
		}
		got(as(rotatedToken, authNS).StateTool(handlestore.StateToolOptions{}).Store(ctx, "carol/k", 4))(t)
		if v := value(t, root, "carol/k"); v != float64(4) {
			t.Fatalf("carol/k is %v", v)
		}
	})

	t.Run("a watch whose grant is revoked ends with permission_denied", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		dave := as(user("dave", grantRead), authNS)
		w := got(dave.Watch(ctx, handlestore.WatchPrefix("dave/"), handlestore.WatchOptions{}))(t)
		defer w.Close()
		tool := root.StateTool(handlestore.StateToolOptions{})
		got(tool.Store(ctx, "dave/1", 1))(t)
		if seen := changes(t, w, 1, 10*time.Second); seen[0].Key != "dave/1" {
			t.Fatalf("%+v", seen)
		}
		got(authOf(root).UserRevokeRole(testkit.Ctx(t), &pb.UserRoleRequest{Name: "dave", Role: "dave"}))(t)
		got(tool.Store(ctx, "dave/2", 2))(t)
		start := time.Now()
		var err error
		for err == nil {
			_, err = w.Next(ctx)
		}
		refused(t, "the watch", start, 15*time.Second, err, handlestore.ErrPermissionDenied, handlestore.ReasonPermissionDenied)
	})
}

func TestAuthWithClientCertificates(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{ClientCerts: []string{"alice"}})
	with := func(tls *handlestore.TLS, token, namespace string) *handlestore.Client {
		return cluster.Client(handlestore.Config{Namespace: namespace, TLS: tls, Token: token, CallTimeout: 20 * time.Second})
	}
	// root's certificate: with auth off, anyone may enable it.
	rootToken := got(authOf(cluster.Client(handlestore.Config{Namespace: authNS})).AuthEnable(testkit.Ctx(t), &pb.AuthEnableRequest{}))(t).GetRootToken()
	root := with(nil, rootToken, authNS)
	addUser(t, root, "alice", true, grantWrite)
	alice := cluster.TLSFor("alice")

	t.Run("a certificate stands in for a token: its common name is the user", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		c := with(alice, "", authNS)
		if s := got(authOf(c).AuthStatus(testkit.Ctx(t), &pb.AuthStatusRequest{}))(t); !s.GetEnabled() || s.GetUser() != "alice" {
			t.Fatalf("status %+v", s)
		}
		got(c.StateTool(handlestore.StateToolOptions{}).Store(ctx, "alice/k", "by certificate"))(t)
		if v := value(t, root, "alice/k"); v != "by certificate" {
			t.Fatalf("%v", v)
		}
		denied(t, "alice elsewhere", storeErr(with(alice, "", "go-other").StateTool(handlestore.StateToolOptions{}), "alice/k", 1))
		if v := value(t, with(nil, rootToken, "go-other"), "alice/k"); v != nil {
			t.Fatalf("written elsewhere: %v", v)
		}
	})

	t.Run("a token, when sent, decides: a wrong one is refused even with a good certificate", func(t *testing.T) {
		unauthenticated(t, "a good certificate, a wrong token", storeErr(with(alice, "not-a-token", authNS).StateTool(handlestore.StateToolOptions{}), "alice/k", "forged"))
		if v := value(t, root, "alice/k"); v != "by certificate" {
			t.Fatalf("%v", v)
		}
	})

	t.Run("no certificate, or one from another CA, is refused at the handshake, at once", func(t *testing.T) {
		start := time.Now()
		err := getErr(with(cluster.TLSFor(""), "", authNS).StateTool(handlestore.StateToolOptions{}), "alice/k")(testkit.Ctx(t))
		refused(t, "no certificate", start, 10*time.Second, err, handlestore.ErrUnauthenticated, handlestore.ReasonUnauthenticated)
		other := filepath.Join(cluster.Root, "other-ca")
		if out, err := exec.Command(cluster.Bin, "certs", "--dir", other, "--client", "alice").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		foreign := got(handlestore.TLSFromFiles(filepath.Join(cluster.Certs, "ca.pem"), filepath.Join(other, "client-alice.pem"), filepath.Join(other, "client-alice-key.pem")))(t)
		start = time.Now()
		err = getErr(with(foreign, "", authNS).StateTool(handlestore.StateToolOptions{}), "alice/k")(testkit.Ctx(t))
		refused(t, "another CA's certificate", start, 10*time.Second, err, handlestore.ErrUnauthenticated, handlestore.ReasonUnauthenticated)
		// Nor with root's token: the handshake comes first.
		start = time.Now()
		err = storeErr(with(foreign, rootToken, authNS).StateTool(handlestore.StateToolOptions{}), "alice/k", "forged")(testkit.Ctx(t))
		refused(t, "another CA's certificate with root's token", start, 10*time.Second, err, handlestore.ErrUnauthenticated, handlestore.ReasonUnauthenticated)
		if v := value(t, root, "alice/k"); v != "by certificate" {
			t.Fatalf("%v", v)
		}
	})
}
