package mcpgo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/mcpevents"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// cutCase is one resumption with mcp-go's own client: the front cuts the
// call's stream after k of its events and sends the reconnection to B.
type cutCase struct {
	k int
	// gapMs between the tool's events: 0 a fast tool, else a slow one.
	gapMs int
	// kill: A dies once the client has heard every event (the tool holds
	// its result until then); killMid: A dies after the client heard that
	// many events, while the tool still has more to send.
	kill    bool
	killMid int
}

const events = 4

func (c cutCase) name() string {
	speed, origin := "fast", "alive"
	if c.gapMs > 0 {
		speed = "slow"
	}
	switch {
	case c.kill:
		origin = "killed"
	case c.killMid > 0:
		origin = fmt.Sprintf("killed after %d", c.killMid)
	}
	return fmt.Sprintf("%s tool, cut after %d, origin %s", speed, c.k, origin)
}

// TestResumptionsFollowTheirOrigin: with mcp-go's own client, a call cut
// after its first event ends on B with every event once, in order, and
// its result once while A lives; with every event A stored once, then the
// origin_lost error, once A died. Cut before its first event, it cannot
// be resumed (mcp-go's server sends no priming event): the call fails at
// once.
func TestResumptionsFollowTheirOrigin(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})
	var cases []cutCase
	for _, k := range []int{events / 2, events} {
		cases = append(cases, cutCase{k: k}, cutCase{k: k, gapMs: 1200}, cutCase{k: k, kill: true})
	}
	cases = append(cases, cutCase{k: 1, gapMs: 1200, killMid: 2})
	for i, cc := range cases {
		t.Run(cc.name(), func(t *testing.T) {
			t.Parallel()
			runCut(t, c, fmt.Sprintf("mcpgo-follow-%d", i), cc)
		})
	}
	t.Run("cut before the first event: the call fails, nothing to resume", func(t *testing.T) {
		t.Parallel()
		ctx := testkit.Ctx(t)
		a, b := newReplica(t, c, "mcpgo-follow-k0"), newReplica(t, c, "mcpgo-follow-k0")
		front := testkit.NewFront(t, a.url, b.url)
		mc := legacy(t, ctx, front.URL, nil)
		front.CutAfter(0, 1)
		_, err := callScript(ctx, mc, cutCase{})
		if err == nil {
			t.Fatal("a call cut before its first event succeeded")
		}
		for _, h := range front.Hits() {
			if h.LastEventID != "" {
				t.Fatalf("a resumption without an event id to resume from: %+v", h)
			}
		}
	})
}

func callScript(ctx context.Context, mc interface {
	CallTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
}, cc cutCase) (*mcp.CallToolResult, error) {
	return mc.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "script", Arguments: map[string]any{"count": events, "gapMs": cc.gapMs, "hold": cc.kill},
	}})
}

type called struct {
	r   *mcp.CallToolResult
	err error
}

func runCut(t *testing.T, c *testkit.Cluster, ns string, cc cutCase) {
	ctx := testkit.Ctx(t)
	a, b := newReplica(t, c, ns), newReplica(t, c, ns)
	front := testkit.NewFront(t, a.url, b.url)
	h := newHeard()
	mc := legacy(t, ctx, front.URL, h)
	front.CutAfter(cc.k, 1)
	done := make(chan called, 1)
	go func() {
		r, err := callScript(ctx, mc, cc)
		done <- called{r, err}
	}()
	var killed time.Time
	if cc.kill || cc.killMid > 0 {
		heard := cc.killMid
		if cc.kill {
			heard = events
		}
		h.Wait(t, heard)
		// The load balancer sends what comes next to B (with k = events the
		// stream was not cut yet: A's death cuts it).
		a.kill()
		front.Point(1)
		killed = time.Now()
	}
	res := <-done
	if cc.kill || cc.killMid > 0 {
		requireOriginLost(t, res, time.Since(killed))
		stored := storedMessages(t, ctx, c, ns)
		if got := deliveredMessages(front); !slices.Equal(got, stored) {
			t.Fatalf("delivered %v, but the cluster has %v", got, stored)
		}
		if n := strings.Count(strings.Join(front.Delivered(), ""), mcpevents.OriginLostReason); n != 1 {
			t.Fatalf("the origin_lost error delivered %d times", n)
		}
	} else {
		if got := text(t, res.r, res.err); got != "done" {
			t.Fatalf("result %q", got)
		}
		want := []string{"1", "2", "3", "4"}
		if got := deliveredMessages(front); !slices.Equal(got, want) {
			t.Fatalf("delivered %v, want %v: a gap, a duplicate or out of order", got, want)
		}
		if n := strings.Count(strings.Join(front.Delivered(), ""), `"text":"done"`); n != 1 {
			t.Fatalf("the result delivered %d times", n)
		}
	}
	if got := h.Got(); !slices.Equal(got, deliveredMessages(front)) {
		t.Fatalf("the client heard %v", got)
	}
	var resumes []string
	for _, hit := range front.Hits() {
		if hit.LastEventID != "" {
			resumes = append(resumes, fmt.Sprintf("%d %d", hit.Replica, hit.Status))
		}
	}
	// One resumption: B keeps it open to the end, the client never polls.
	if !slices.Equal(resumes, []string{"1 200"}) {
		t.Fatalf("resumptions %v, want one, on B (1), served", resumes)
	}
}

// bound is how long after its origin died a resumed call may take to end:
// the liveness record's TTL after its last refresh, the node's sweep, and
// slack for a loaded machine. A bound, not a speed: past it, it hangs.
const bound = mcpevents.LiveTTL + mcpevents.LiveRefresh + 15*time.Second

func requireOriginLost(t *testing.T, res called, took time.Duration) {
	t.Helper()
	if !errors.Is(res.err, mcp.ErrInternalError) || !strings.Contains(res.err.Error(), mcpevents.OriginLostMessage) {
		t.Fatalf("the call ended with %v, %v; want the origin_lost error", res.r, res.err)
	}
	if took > bound {
		t.Fatalf("the call ended %v after its origin died; the bound is %v", took, bound)
	}
}

// deliveredMessages is the notifications/message data the front
// delivered, in order.
func deliveredMessages(f *testkit.Front) []string {
	var out []string
	for _, ev := range f.Delivered() {
		for line := range strings.Lines(ev) {
			if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:"); ok {
				if m := messageOf(json.RawMessage(strings.TrimPrefix(v, " "))); m != "" {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

func messageOf(raw json.RawMessage) string {
	var n struct {
		Method string `json:"method"`
		Params struct {
			Data string `json:"data"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &n) != nil || n.Method != "notifications/message" {
		return ""
	}
	return n.Params.Data
}

// storedMessages is the notifications/message data the cluster holds in
// ns, in key order: stream order (the test's namespace has one call).
func storedMessages(t *testing.T, ctx context.Context, c *testkit.Cluster, ns string) []string {
	t.Helper()
	st := c.Client(handlestore.Config{Namespace: ns}).StateTool(handlestore.StateToolOptions{})
	var out []string
	for e, err := range st.Scan(ctx, mcpevents.Prefix+"/events/", handlestore.ListOptions{WithValues: true}) {
		testkit.NoErr(t, err)
		var ev struct{ Message json.RawMessage }
		testkit.NoErr(t, e.Value.Decode(&ev))
		if m := messageOf(ev.Message); m != "" {
			out = append(out, m)
		}
	}
	return out
}
