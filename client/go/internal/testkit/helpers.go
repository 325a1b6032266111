package testkit

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// Main runs a package's tests, saying first, once and in any output
// mode, why its cluster tests skip (what names them: "the go-sdk seams'
// cluster tests").
func Main(m *testing.M, what string) {
	if why := SkipReason(); why != "" {
		fmt.Printf("SKIPPED: %s: %s\n", what, why)
	}
	os.Exit(m.Run())
}

// Ctx bounds a test's calls: two minutes, or until the test ends.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Must is v, or the test fails with err: testkit.Must[T](t)(f()).
func Must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// NoErr fails the test with err, if there is one.
func NoErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Heard records what a client hears (notifications, progress messages),
// from any goroutine, in order.
type Heard struct {
	mu   sync.Mutex
	msgs []string
	more chan struct{}
}

// NewHeard is an empty record.
func NewHeard() *Heard { return &Heard{more: make(chan struct{}, 1)} }

// Add records one message.
func (h *Heard) Add(msg string) {
	h.mu.Lock()
	h.msgs = append(h.msgs, msg)
	h.mu.Unlock()
	select {
	case h.more <- struct{}{}:
	default:
	}
}

// Got is every message so far.
func (h *Heard) Got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

// Wait returns once n messages were heard; the test fails after a minute.
func (h *Heard) Wait(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for len(h.Got()) < n {
		select {
		case <-h.more:
		case <-deadline:
			t.Fatalf("heard %v, waiting for %d", h.Got(), n)
		}
	}
}
