package handlestore_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// formatCase is one case of the shared format vectors
// (proto/vectors/formats.json): what the node decides about an input.
type formatCase struct {
	Input json.RawMessage `json:"input"`
	Valid bool            `json:"valid"`
	Why   string          `json:"why"`
}

// expand is a case's input: a string, or parts (strings or
// {"repeat", "times"}) concatenated.
func expand(t *testing.T, raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(expand(t, p))
		}
		return b.String()
	}
	var rep struct {
		Repeat string `json:"repeat"`
		Times  int    `json:"times"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("bad input %s: %v", raw, err)
	}
	return strings.Repeat(rep.Repeat, rep.Times)
}

func TestFormatVectors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testkit.Repo(), "proto", "vectors", "formats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var formats map[string]json.RawMessage
	if err := json.Unmarshal(data, &formats); err != nil {
		t.Fatal(err)
	}
	checks := map[string]func(string) bool{
		"handle_ids": func(s string) bool { return handlestore.CheckHandleID(s) == nil },
		"names":      handlestore.IsName,
		"keys":       func(s string) bool { return handlestore.CheckKey(s) == nil },
		"prefixes":   func(s string) bool { return handlestore.CheckPrefix(s) == nil },
	}
	for kind, check := range checks {
		var cases []formatCase
		if err := json.Unmarshal(formats[kind], &cases); err != nil || len(cases) == 0 {
			t.Fatalf("%s: %d cases, %v", kind, len(cases), err)
		}
		for _, c := range cases {
			if got := check(expand(t, c.Input)); got != c.Valid {
				t.Errorf("%s %s (%s): valid = %v, the node says %v", kind, c.Input, c.Why, got, c.Valid)
			}
		}
	}
}
