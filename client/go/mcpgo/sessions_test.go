package mcpgo_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
	"github.com/handlestore/handlestore/client/go/mcpgo"
)

// The cases of mcp-go's TestInsecureStatefulSessionIdManager
// (server/streamable_http_test.go, v1.2.1), and the replicas.
func TestTheSessionIdManagerOnACluster(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})
	manager := func(t *testing.T, opts mcpgo.SessionOptions) *mcpgo.SessionIdManager {
		return testkit.Must[*mcpgo.SessionIdManager](t)(mcpgo.NewSessionIdManager(c.Client(handlestore.Config{Namespace: "mcpgo-sessions"}), opts))
	}
	m := manager(t, mcpgo.SessionOptions{})
	// Well-formed, never minted (mcp-go's cases use a UUID, which this
	// manager's ids are not: that one is malformed here).
	fake := mcpgo.SessionIDPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAA"

	t.Run("Generate creates valid session ID", func(t *testing.T) {
		id := m.Generate()
		if !strings.HasPrefix(id, mcpgo.SessionIDPrefix) || mcpgo.CheckSessionID(id) != nil {
			t.Fatalf("id %q", id)
		}
		if terminated, err := m.Validate(id); err != nil || terminated {
			t.Fatalf("Validate: %v %v", terminated, err)
		}
	})

	t.Run("Validate rejects non-existent session ID", func(t *testing.T) {
		terminated, err := m.Validate(fake)
		if err == nil || terminated || !strings.Contains(err.Error(), "session not found") || !errors.Is(err, mcpgo.ErrSessionNotFound) {
			t.Fatalf("Validate: %v %v", terminated, err)
		}
	})

	t.Run("Validate rejects malformed session ID", func(t *testing.T) {
		for _, id := range []string{"invalid-session-id", "", "mcp-session-ffffffff-ffff-ffff-ffff-ffffffffffff", fake + "x", "mcp-session-x-AAAAAAAAAAAAAAAAAAAAAAAAAA"} {
			if _, err := m.Validate(id); err == nil || !strings.Contains(err.Error(), "invalid session id") {
				t.Errorf("Validate(%q): %v", id, err)
			}
		}
	})

	t.Run("Terminate marks session as terminated", func(t *testing.T) {
		id := m.Generate()
		if notAllowed, err := m.Terminate(id); err != nil || notAllowed {
			t.Fatalf("Terminate: %v %v", notAllowed, err)
		}
		if terminated, err := m.Validate(id); err != nil || !terminated {
			t.Fatalf("Validate: %v %v", terminated, err)
		}
	})

	t.Run("Terminate is idempotent for non-existent session ID", func(t *testing.T) {
		if notAllowed, err := m.Terminate(mcpgo.SessionIDPrefix + "BAAAAAAAAAAAAAAAAAAAAAAAAA"); err != nil || notAllowed {
			t.Fatalf("Terminate: %v %v", notAllowed, err)
		}
	})

	t.Run("Terminate is idempotent for already-terminated session", func(t *testing.T) {
		id := m.Generate()
		for range 2 {
			if notAllowed, err := m.Terminate(id); err != nil || notAllowed {
				t.Fatalf("Terminate: %v %v", notAllowed, err)
			}
		}
	})

	t.Run("Concurrent generate and validate", func(t *testing.T) {
		ids := make([]string, 100)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() { ids[i] = m.Generate() })
		}
		wg.Wait()
		seen := map[string]bool{}
		for _, id := range ids {
			if terminated, err := m.Validate(id); err != nil || terminated || seen[id] {
				t.Fatalf("%s: %v %v (seen: %v)", id, terminated, err, seen[id])
			}
			seen[id] = true
		}
	})

	t.Run("minted on A validates on B; terminated on B is invalid on A", func(t *testing.T) {
		a, b := manager(t, mcpgo.SessionOptions{}), manager(t, mcpgo.SessionOptions{})
		id := a.Generate()
		if terminated, err := b.Validate(id); err != nil || terminated {
			t.Fatalf("B: %v %v", terminated, err)
		}
		if _, err := b.Terminate(id); err != nil {
			t.Fatal(err)
		}
		if terminated, err := a.Validate(id); err != nil || !terminated {
			t.Fatalf("A after B terminated: %v %v", terminated, err)
		}
		// The resolver's view is the same manager, bound to a request.
		if terminated, err := a.ResolveSessionIdManager(nil).Validate(id); err != nil || !terminated {
			t.Fatalf("resolved: %v %v", terminated, err)
		}
	})

	t.Run("a session in use lives on; one left alone expires", func(t *testing.T) {
		short := manager(t, mcpgo.SessionOptions{TTL: 2 * time.Second})
		used, idle := short.Generate(), short.Generate()
		// A session lives 2.5 s after a write, and Validate writes again
		// once less than 2 s are left.
		for range 6 {
			time.Sleep(600 * time.Millisecond)
			if terminated, err := short.Validate(used); err != nil || terminated {
				t.Fatalf("the session in use: %v %v", terminated, err)
			}
		}
		if _, err := short.Validate(idle); !errors.Is(err, mcpgo.ErrSessionNotFound) {
			t.Fatalf("the idle session after %v: %v", 3600*time.Millisecond, err)
		}
	})
}

func TestAMalformedSessionIDMakesNoCall(t *testing.T) {
	dead := testkit.Must[*handlestore.Client](t)(handlestore.New(handlestore.Config{Endpoints: []string{"127.0.0.1:1"}, CallTimeout: 5 * time.Second}))
	defer dead.Close()
	m := testkit.Must[*mcpgo.SessionIdManager](t)(mcpgo.NewSessionIdManager(dead, mcpgo.SessionOptions{}))
	start := time.Now()
	for _, id := range []string{"", "nope", "mcp-session-", "mcp-session-../../x", "mcp-session-AAAAAAAAAAAAAAAAAAAAAAAAAB"} {
		if _, err := m.Validate(id); !errors.Is(err, mcpgo.ErrInvalidSessionID) {
			t.Errorf("Validate(%q): %v", id, err)
		}
		if _, err := m.Terminate(id); !errors.Is(err, mcpgo.ErrInvalidSessionID) {
			t.Errorf("Terminate(%q): %v", id, err)
		}
	}
	if time.Since(start) > time.Second {
		t.Fatalf("took %v: a call was made", time.Since(start))
	}
	if _, err := mcpgo.NewSessionIdManager(dead, mcpgo.SessionOptions{Prefix: "a//b"}); !errors.Is(err, handlestore.ErrInvalidArgument) {
		t.Errorf("a bad prefix: %v", err)
	}
}
