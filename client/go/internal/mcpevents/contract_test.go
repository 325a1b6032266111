package mcpevents

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// eventVectors is proto/vectors/mcp_events.json, the contract of every
// client's event store.
type eventVectors struct {
	Prefix string `json:"prefix"`
	Bucket uint64 `json:"bucket"`
	Widths struct {
		Bucket int `json:"bucket"`
		Seq    int `json:"seq"`
	} `json:"widths"`
	MaxSeq uint64 `json:"max_seq"`
	Live   struct {
		TTLMs      int64 `json:"ttl_ms"`
		RefreshMs  int64 `json:"refresh_ms"`
		EndedTTLMs int64 `json:"ended_ttl_ms"`
	} `json:"live"`
	Follow struct {
		KeepaliveMs int64 `json:"keepalive_ms"`
	} `json:"follow"`
	OriginLost struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
	} `json:"origin_lost"`
	Digests []struct {
		Input, Digest string
	} `json:"digests"`
	Keys []struct {
		Kind         string `json:"kind"`
		StreamDigest string `json:"stream_digest"`
		Token        string `json:"token"`
		Seq          uint64 `json:"seq"`
		Key          string `json:"key"`
	} `json:"keys"`
	EventIDs []struct {
		Input string `json:"input"`
		Token string `json:"token"`
		Seq   uint64 `json:"seq"`
		Valid *bool  `json:"valid"`
		Why   string `json:"why"`
	} `json:"event_ids"`
	Completion struct {
		Cases []struct {
			Requests []json.RawMessage `json:"requests"`
			Messages []json.RawMessage `json:"messages"`
			Complete bool              `json:"complete"`
			Why      string            `json:"why"`
		} `json:"cases"`
	} `json:"completion"`
}

func loadEventVectors(t *testing.T) eventVectors {
	t.Helper()
	raw, err := os.ReadFile(testkit.EventVectorsPath())
	if err != nil {
		t.Fatal(err)
	}
	var v eventVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Digests) == 0 || len(v.Keys) == 0 || len(v.EventIDs) == 0 || len(v.Completion.Cases) == 0 {
		t.Fatal("the vectors file has an empty section")
	}
	return v
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func TestTheConstantsAreTheContracts(t *testing.T) {
	v := loadEventVectors(t)
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"prefix", Prefix, v.Prefix},
		{"bucket", uint64(Bucket), v.Bucket},
		{"bucket width", bucketWidth, v.Widths.Bucket},
		{"seq width", seqWidth, v.Widths.Seq},
		{"max_seq", uint64(maxSeq), v.MaxSeq},
		{"live.ttl_ms", ms(LiveTTL), v.Live.TTLMs},
		{"live.refresh_ms", ms(LiveRefresh), v.Live.RefreshMs},
		{"live.ended_ttl_ms", ms(liveEndedTTL), v.Live.EndedTTLMs},
		{"follow.keepalive_ms", ms(Keepalive), v.Follow.KeepaliveMs},
		{"origin_lost.code", OriginLostCode, v.OriginLost.Code},
		{"origin_lost.message", OriginLostMessage, v.OriginLost.Message},
		{"origin_lost.reason", OriginLostReason, v.OriginLost.Reason},
	} {
		if c.got != c.want {
			t.Errorf("%s: the code has %v, the contract %v", c.name, c.got, c.want)
		}
	}
}

func TestOriginLostIsTheContractsErrorResponse(t *testing.T) {
	v := loadEventVectors(t)
	for _, id := range []string{`7`, `"a"`} {
		var got struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Data    struct {
					Reason string `json:"reason"`
				} `json:"data"`
			} `json:"error"`
		}
		msg := OriginLost(json.RawMessage(id))
		if err := json.Unmarshal(msg, &got); err != nil {
			t.Fatal(err)
		}
		if got.JSONRPC != "2.0" || string(got.ID) != id || got.Error.Code != v.OriginLost.Code ||
			got.Error.Message != v.OriginLost.Message || got.Error.Data.Reason != v.OriginLost.Reason {
			t.Errorf("OriginLost(%s) = %s", id, msg)
		}
		// It answers the request it names, and only that one.
		if !NewPending([]json.RawMessage{json.RawMessage(id)}).Add(msg) {
			t.Errorf("OriginLost(%s) does not answer its request", id)
		}
	}
}

func TestDigestsAndKeysAreTheContracts(t *testing.T) {
	v := loadEventVectors(t)
	l := &Log{prefix: v.Prefix}
	inputOf := map[string]string{}
	for _, d := range v.Digests {
		if got := Digest(d.Input); got != d.Digest {
			t.Errorf("Digest(%q) = %s, want %s", d.Input, got, d.Digest)
		}
		inputOf[d.Digest] = d.Input
	}
	for _, k := range v.Keys {
		var got string
		switch k.Kind {
		case "head":
			input, ok := inputOf[k.StreamDigest]
			if !ok {
				t.Fatalf("no digest input for %s", k.StreamDigest)
			}
			session, stream, scoped := strings.Cut(input, "\x00")
			if !scoped {
				session, stream = "", input
			}
			got = l.HeadKey(session, stream)
		case "token":
			got = l.TokenKey(k.Token)
		case "live":
			got = l.LiveKey(k.Token)
		case "requests":
			got = l.RequestsKey(k.Token)
		case "event":
			got = l.EventKey(k.Token, k.Seq)
		default:
			t.Fatalf("a key of kind %q", k.Kind)
		}
		if got != k.Key {
			t.Errorf("%s key: %s, want %s", k.Kind, got, k.Key)
		}
	}
}

func TestEventIDsAreTheContracts(t *testing.T) {
	for _, c := range loadEventVectors(t).EventIDs {
		token, seq, ok := ParseEventID(c.Input)
		valid := c.Valid == nil || *c.Valid
		if ok != valid {
			t.Errorf("ParseEventID(%q) accepted %v, want %v (%s)", c.Input, ok, valid, c.Why)
			continue
		}
		if !valid {
			continue
		}
		if token != c.Token || seq != c.Seq {
			t.Errorf("ParseEventID(%q) = %s, %d; want %s, %d", c.Input, token, seq, c.Token, c.Seq)
		}
		if id := FormatEventID(c.Token, c.Seq); id != c.Input {
			t.Errorf("FormatEventID(%s, %d) = %s", c.Token, c.Seq, id)
		}
	}
}

func TestCompletionIsTheContracts(t *testing.T) {
	for _, c := range loadEventVectors(t).Completion.Cases {
		p := NewPending(c.Requests)
		complete := false
		for _, m := range c.Messages {
			var data []byte
			if string(m) != "null" {
				data = m
			}
			if predicted := p.Completes(data); predicted != (!complete && p.clone().Add(data)) {
				t.Errorf("%s: Completes(%s) = %v, but Add disagrees", c.Why, m, predicted)
			}
			complete = p.Add(data)
		}
		if complete != c.Complete || p.Complete() != c.Complete {
			t.Errorf("%s: complete %v, want %v", c.Why, complete, c.Complete)
		}
	}
}

// clone is a copy of p, for a test to try a message on.
func (p *Pending) clone() *Pending {
	c := &Pending{requests: p.requests, open: map[string]bool{}, complete: p.complete}
	for k, v := range p.open {
		c.open[k] = v
	}
	return c
}
