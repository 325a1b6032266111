package gosdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/mcpevents"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// cutCase is one resumption with go-sdk's own client: the front cuts the
// call's stream after k of its events and sends the reconnection to B.
type cutCase struct {
	stateless bool
	k         int
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
	mode, speed, origin := "stateful", "fast", "alive"
	if c.stateless {
		mode = "stateless"
	}
	if c.gapMs > 0 {
		speed = "slow"
	}
	switch {
	case c.kill:
		origin = "killed"
	case c.killMid > 0:
		origin = fmt.Sprintf("killed after %d", c.killMid)
	}
	return fmt.Sprintf("%s, %s tool, cut after %d, origin %s", mode, speed, c.k, origin)
}

func cutCases() []cutCase {
	var cases []cutCase
	for _, stateless := range []bool{false, true} {
		for _, k := range []int{0, events / 2, events} {
			cases = append(cases,
				cutCase{stateless: stateless, k: k},
				cutCase{stateless: stateless, k: k, gapMs: 1200},
				cutCase{stateless: stateless, k: k, kill: true})
		}
		cases = append(cases, cutCase{stateless: stateless, k: 1, gapMs: 1200, killMid: 2})
	}
	return cases
}

// TestResumptionsFollowTheirOrigin: with go-sdk's own client, a call cut at
// any point ends on B with every event once, in order, and its result
// once while A lives; with every event A stored once, then the
// origin_lost error, once A died.
func TestResumptionsFollowTheirOrigin(t *testing.T) {
	c := testkit.Start(t, testkit.Options{})
	for i, cc := range cutCases() {
		t.Run(cc.name(), func(t *testing.T) {
			t.Parallel()
			runCut(t, c, fmt.Sprintf("gosdk-follow-%d", i), cc)
		})
	}
}

func runCut(t *testing.T, c *testkit.Cluster, ns string, cc cutCase) {
	ctx := testkit.Ctx(t)
	a, b := newReplica(t, c, ns, cc.stateless), newReplica(t, c, ns, cc.stateless)
	front := testkit.NewFront(t, a.url, b.url)
	p := newProgress()
	protocol := ""
	if cc.stateless {
		protocol = "2025-11-25" // resumable streams end with 2026-07-28
	}
	cs := connect(t, ctx, front.URL, p, protocol)
	front.CutAfter(cc.k, 1)
	done := make(chan called, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "script", Arguments: script{Count: events, GapMs: cc.gapMs, Hold: cc.kill}}
		params.SetProgressToken("p")
		res, err := cs.CallTool(ctx, params)
		done <- called{res, err}
	}()
	var killed time.Time
	if cc.kill || cc.killMid > 0 {
		heard := cc.killMid
		if cc.kill {
			heard = events
		}
		p.Wait(t, heard)
		// The load balancer sends what comes next to B (with k = events the
		// stream was not cut yet: A's death cuts it).
		a.kill()
		front.Point(1)
		killed = time.Now()
	}
	res := <-done
	if cc.kill || cc.killMid > 0 {
		requireOriginLost(t, res, time.Since(killed))
		stored := storedProgress(t, ctx, c, ns)
		if got := deliveredProgress(front); !slices.Equal(got, stored) {
			t.Fatalf("delivered %v, but the cluster has %v", got, stored)
		}
		if n := strings.Count(strings.Join(front.Delivered(), ""), mcpevents.OriginLostReason); n != 1 {
			t.Fatalf("the origin_lost error delivered %d times", n)
		}
	} else {
		if got := resultText(t, res); got != "done" {
			t.Fatalf("result %q", got)
		}
		want := []string{"1", "2", "3", "4"}
		if got := deliveredProgress(front); !slices.Equal(got, want) {
			t.Fatalf("delivered %v, want %v: a gap, a duplicate or out of order", got, want)
		}
		if n := strings.Count(strings.Join(front.Delivered(), ""), `"text":"done"`); n != 1 {
			t.Fatalf("the result delivered %d times", n)
		}
	}
	p.Wait(t, len(deliveredProgress(front)))
	// One resumption: B keeps it open to the end, the client never has to
	// come back.
	if rs := resumes(front); !slices.Equal(rs, []string{"1 200"}) {
		t.Fatalf("resumptions %v, want one, on B (1), served", rs)
	}
}

// bound is how long after its origin died a resumed call may take to end:
// the liveness record's TTL after its last refresh, the node's sweep, and
// slack for a loaded machine. A bound, not a speed: past it, it hangs.
const bound = mcpevents.LiveTTL + mcpevents.LiveRefresh + 15*time.Second

func requireOriginLost(t *testing.T, res called, took time.Duration) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(res.err, &werr) {
		t.Fatalf("the call ended with %v, %v; want the origin_lost error", res.res, res.err)
	}
	var data struct{ Reason string }
	_ = json.Unmarshal(werr.Data, &data)
	if werr.Code != mcpevents.OriginLostCode || werr.Message != mcpevents.OriginLostMessage || data.Reason != mcpevents.OriginLostReason {
		t.Fatalf("the call ended with %d %q %s", werr.Code, werr.Message, werr.Data)
	}
	if took > bound {
		t.Fatalf("the call ended %v after its origin died; the bound is %v", took, bound)
	}
}

// deliveredProgress is the progress messages the front delivered, in
// order.
func deliveredProgress(f *testkit.Front) []string {
	var out []string
	for _, ev := range f.Delivered() {
		if m := progressOf(sseData(ev)); m != "" {
			out = append(out, m)
		}
	}
	return out
}

func sseData(ev string) string {
	var data []string
	for line := range strings.Lines(ev) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
		}
	}
	return strings.Join(data, "\n")
}

func progressOf(msg string) string {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(msg), &m) != nil || m.Method != "notifications/progress" {
		return ""
	}
	return m.Params.Message
}

// storedProgress is the progress messages the cluster holds in ns, in
// key order: stream order (the test's namespace has one call).
func storedProgress(t *testing.T, ctx context.Context, c *testkit.Cluster, ns string) []string {
	t.Helper()
	st := c.Client(handlestore.Config{Namespace: ns}).StateTool(handlestore.StateToolOptions{})
	var out []string
	for e, err := range st.Scan(ctx, mcpevents.Prefix+"/events/", handlestore.ListOptions{WithValues: true}) {
		testkit.NoErr(t, err)
		var ev struct{ Message json.RawMessage }
		testkit.NoErr(t, e.Value.Decode(&ev))
		if m := progressOf(string(ev.Message)); m != "" {
			out = append(out, m)
		}
	}
	return out
}
