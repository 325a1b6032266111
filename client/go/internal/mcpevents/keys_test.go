package mcpevents

import (
	"strings"
	"testing"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// The names the Python package's digest_name and page_token_after give
// (handlestore._encoding), as the TypeScript and Rust stores do.
func TestKeyNamesMatchTheOtherClients(t *testing.T) {
	for _, c := range []struct{ s, digest, token string }{
		{"", "4OYMIQUY7QOBJGX36TEJS35ZEQ", "bWNwL2V2ZW50cy9ldmVudHMv"},
		{"stream-a", "XF6JIGNSLKJHGULU5SGUJVTO7I", "bWNwL2V2ZW50cy9ldmVudHMvc3RyZWFtLWE"},
		{"S1\x00_GET_stream", "FNEVI7ZPWR5IJU4SGJLLOVGVAU", "bWNwL2V2ZW50cy9ldmVudHMvUzEAX0dFVF9zdHJlYW0"},
		{"ü/€", "4RITTOOWRUBX3M4KOREBSHP7IU", "bWNwL2V2ZW50cy9ldmVudHMvw7wv4oKs"},
	} {
		if got := Digest(c.s); got != c.digest {
			t.Errorf("Digest(%q) = %s, want %s", c.s, got, c.digest)
		}
		if got := PageTokenAfter("mcp/events/events/" + c.s); got != c.token {
			t.Errorf("PageTokenAfter(%q) = %s, want %s", c.s, got, c.token)
		}
	}
}

func TestKeysAreTheLayoutOfTheOtherStores(t *testing.T) {
	l := &Log{prefix: Prefix}
	token := "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	if got, want := l.EventKey(token, 1234), "mcp/events/events/"+token+"/000000000012/00000000000000001234"; got != want {
		t.Errorf("EventKey = %s, want %s", got, want)
	}
	if got, want := l.HeadKey("", "stream-a"), "mcp/events/streams/XF6JIGNSLKJHGULU5SGUJVTO7I"; got != want {
		t.Errorf("HeadKey = %s, want %s", got, want)
	}
	// A session scopes its streams as the TypeScript store's scoped(sessionId).
	if got, want := l.HeadKey("S1", "_GET_stream"), "mcp/events/streams/FNEVI7ZPWR5IJU4SGJLLOVGVAU"; got != want {
		t.Errorf("HeadKey = %s, want %s", got, want)
	}
	if got, want := l.TokenKey(token), "mcp/events/tokens/"+token; got != want {
		t.Errorf("TokenKey = %s, want %s", got, want)
	}
	// Keys sort in sequence order.
	if !(l.EventKey(token, 99) < l.EventKey(token, 100) && l.EventKey(token, 100) < l.EventKey(token, 1000)) {
		t.Error("event keys do not sort in sequence order")
	}
}

// The cases of the TypeScript store's parseEventId test.
func TestEventIDs(t *testing.T) {
	token := "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for _, c := range []struct {
		id  string
		seq uint64
	}{{token + ".42", 42}, {token + ".0", 0}, {token + ".9007199254740991", 1<<53 - 1}} {
		tok, seq, ok := ParseEventID(c.id)
		if !ok || tok != token || seq != c.seq {
			t.Errorf("ParseEventID(%q) = %q, %d, %v", c.id, tok, seq, ok)
		}
		if FormatEventID(tok, seq) != c.id {
			t.Errorf("FormatEventID(%q, %d) = %q", tok, seq, FormatEventID(tok, seq))
		}
	}
	bad := []string{"", "x", "ABC.1", token + ".", token + ".-1", token + ".+1", token + ".01", token + ".1e3",
		strings.ToLower(token) + ".1", token + ".99999999999999999", token + ".9007199254740992", token + ".1.2",
		" " + token + ".1", token + ".1\n", token + "_1", "_GET_stream_3"}
	for _, id := range bad {
		if _, _, ok := ParseEventID(id); ok {
			t.Errorf("ParseEventID(%q) accepted", id)
		}
	}
}

func TestEventValuesKeepTheBytes(t *testing.T) {
	for _, data := range []string{`{"jsonrpc":"2.0","method":"m"}`, `d1`, ` {"a":1}`, `null`, "\x00\xff", `[1,2]`} {
		v := eventValue([]byte(data))
		if !strings.HasPrefix(string(v), `{"message":`) {
			t.Errorf("%q: value %s", data, v)
		}
		value, err := handlestore.JSONValue(v)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := eventData(value); err != nil || string(back) != data {
			t.Errorf("%q came back as %q, %v", data, back, err)
		}
	}
	if got := string(eventValue([]byte(`{"a":1}`))); got != `{"message":{"a":1}}` {
		t.Errorf("a JSON message is not kept as the other stores keep it: %s", got)
	}
	if got := string(eventValue(nil)); got != `{"message":null}` {
		t.Errorf("a priming event: %s", got)
	}
}
