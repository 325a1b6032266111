package mcpgo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
	"github.com/handlestore/handlestore/client/go/mcpgo"
)

// helperEnv makes the test binary the helper process: another client
// process that loads the token and prints it as JSON.
const helperEnv = "MCPGO_TOKEN_HELPER"

func helperProcess() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, err := handlestore.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	client, err := handlestore.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer client.Close()
	store, err := mcpgo.TokenStoreFromCluster(ctx, client, os.Getenv(helperEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	token, err := store.GetToken(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(token)
	return 0
}

func TestTheTokenStoreOnACluster(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})
	ctx := testkit.Ctx(t)
	client := c.Client(handlestore.Config{Namespace: "mcpgo-tokens"})
	if _, err := mcpgo.TokenStoreFromCluster(ctx, client, "app-alice"); !errors.Is(err, handlestore.ErrNotFound) {
		t.Fatalf("without a key ring: %v", err)
	}
	if _, err := client.KeyringRotate(ctx, true); err != nil {
		t.Fatal(err)
	}
	store := testkit.Must[*mcpgo.TokenStore](t)(mcpgo.TokenStoreFromCluster(ctx, client, "app-alice"))

	t.Run("mcp-go's TestMemoryTokenStore", func(t *testing.T) {
		empty := testkit.Must[*mcpgo.TokenStore](t)(mcpgo.TokenStoreFromCluster(ctx, client, "app-nobody"))
		if _, err := empty.GetToken(ctx); !errors.Is(err, transport.ErrNoToken) {
			t.Errorf("an empty store: %v, want ErrNoToken", err)
		}
		token := &transport.Token{AccessToken: "test-token", TokenType: "Bearer", RefreshToken: "refresh-token",
			ExpiresIn: 3600, ExpiresAt: time.Now().Add(time.Hour).Truncate(time.Second)}
		if err := empty.SaveToken(ctx, token); err != nil {
			t.Fatal(err)
		}
		got := testkit.Must[*transport.Token](t)(empty.GetToken(ctx))
		if got.AccessToken != token.AccessToken || got.TokenType != token.TokenType || got.RefreshToken != token.RefreshToken ||
			got.ExpiresIn != 3600 || !got.ExpiresAt.Equal(token.ExpiresAt) {
			t.Errorf("got %+v, want %+v", got, token)
		}
	})

	t.Run("mcp-go's TestMemoryTokenStore_ContextCancellation", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel2()
		token := &transport.Token{AccessToken: "test-token", TokenType: "Bearer"}
		for _, c := range []struct {
			ctx  context.Context
			want error
		}{{cancelled, context.Canceled}, {past, context.DeadlineExceeded}} {
			if _, err := store.GetToken(c.ctx); !errors.Is(err, c.want) {
				t.Errorf("GetToken: %v, want %v", err, c.want)
			}
			if err := store.SaveToken(c.ctx, token); !errors.Is(err, c.want) {
				t.Errorf("SaveToken: %v, want %v", err, c.want)
			}
		}
	})

	t.Run("saved by one client process, loaded by another; never stored in the clear", func(t *testing.T) {
		token := &transport.Token{AccessToken: "at-" + handlestore.NewHandleID(""), TokenType: "Bearer",
			RefreshToken: "rt-" + handlestore.NewHandleID(""), Scope: "carts:write", ExpiresAt: time.Now().Add(time.Hour).Truncate(time.Second)}
		if err := store.SaveToken(ctx, token); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=app-alice", "HANDLESTORE_ENDPOINTS="+strings.Join(c.Endpoints(), ","),
			"HANDLESTORE_NAMESPACE=mcpgo-tokens")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the other process: %v\n%s", err, out)
		}
		var loaded transport.Token
		if err := json.Unmarshal(out, &loaded); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if loaded.AccessToken != token.AccessToken || loaded.RefreshToken != token.RefreshToken || loaded.Scope != token.Scope ||
			!loaded.ExpiresAt.Equal(token.ExpiresAt) {
			t.Fatalf("the other process loaded %+v, want %+v", loaded, token)
		}
		// What the cluster holds: a sealed blob under the key the Python and
		// TypeScript clients read, with neither token in it.
		raw, err := client.StateTool(handlestore.StateToolOptions{}).Retrieve(ctx, "mcp-clients/app-alice/"+mcpgo.TokensField)
		if err != nil || raw == nil {
			t.Fatalf("the stored value: %v", err)
		}
		stored := string(raw.Value.JSON())
		if !strings.HasPrefix(stored, `"v1e.`) {
			t.Errorf("stored %s, want an encrypted blob", stored)
		}
		// Nor in any other key of the namespace.
		for e, err := range client.StateTool(handlestore.StateToolOptions{}).Scan(ctx, "", handlestore.ListOptions{WithValues: true}) {
			if err != nil {
				t.Fatal(err)
			}
			value := string(e.Value.JSON()) + string(e.Value.Bytes())
			for _, secret := range []string{token.AccessToken, token.RefreshToken, token.Scope} {
				if strings.Contains(value, secret) {
					t.Fatalf("%q is in the clear in %s: %s", secret, e.Key, value)
				}
			}
		}
		// The client state store's reader sees the same token.
		state := testkit.Must[*handlestore.ClientStateStore](t)(handlestore.ClientStateStoreFromCluster(ctx, client, "app-alice"))
		var viaState transport.Token
		if ok, err := state.Sealed(ctx, mcpgo.TokensField, &viaState); !ok || err != nil || viaState.AccessToken != token.AccessToken {
			t.Fatalf("ClientStateStore.Sealed: %v %v %+v", ok, err, viaState)
		}
	})

	t.Run("a token whose key was retired is no token", func(t *testing.T) {
		ns := testkit.Must[*handlestore.Client](t)(client.WithNamespace("mcpgo-tokens-retire"))
		if _, err := ns.KeyringRotate(ctx, true); err != nil {
			t.Fatal(err)
		}
		s := testkit.Must[*mcpgo.TokenStore](t)(mcpgo.TokenStoreFromCluster(ctx, ns, "app-bob"))
		if err := s.SaveToken(ctx, &transport.Token{AccessToken: "old"}); err != nil {
			t.Fatal(err)
		}
		keys := testkit.Must[[]handlestore.RingKey](t)(ns.Keyring(ctx, false))
		if _, err := ns.KeyringRotate(ctx, false); err != nil {
			t.Fatal(err)
		}
		if err := ns.KeyringRetire(ctx, keys[0].ID); err != nil {
			t.Fatal(err)
		}
		fresh := testkit.Must[*mcpgo.TokenStore](t)(mcpgo.TokenStoreFromCluster(ctx, ns, "app-bob"))
		if _, err := fresh.GetToken(ctx); !errors.Is(err, transport.ErrNoToken) {
			t.Fatalf("after retiring its key: %v, want ErrNoToken", err)
		}
	})

	if err := store.SaveToken(ctx, nil); !errors.Is(err, handlestore.ErrInvalidArgument) {
		t.Fatalf("a nil token: %v", err)
	}
}
