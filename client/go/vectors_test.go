package handlestore_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

type vector struct {
	Name    string          `json:"name"`
	Mode    string          `json:"mode"`
	Blob    string          `json:"blob"`
	Encodes bool            `json:"encodes"`
	Subject string          `json:"subject"`
	Tool    *string         `json:"tool"`
	Ring    []string        `json:"ring"`
	Now     uint64          `json:"now"`
	Expect  json.RawMessage `json:"expect"`
}

type vectors struct {
	Keys    map[string]string `json:"keys"`
	Primary string            `json:"primary"`
	Exp     uint64            `json:"exp"`
	Nonce   string            `json:"nonce"`
	Vectors []vector          `json:"vectors"`
}

func loadVectors(t *testing.T) vectors {
	raw, err := os.ReadFile(testkit.VectorsPath())
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func (vs vectors) codec(t *testing.T, v vector) *handlestore.RequestStateCodec {
	var ring []handlestore.RingKey
	for _, id := range v.Ring {
		secret, err := hex.DecodeString(vs.Keys[id])
		if err != nil {
			t.Fatal(err)
		}
		ring = append(ring, handlestore.RingKey{ID: id, Primary: id == vs.Primary, Secret: secret})
	}
	mode := handlestore.SealSigned
	if v.Mode == "encrypted" {
		mode = handlestore.SealEncrypted
	}
	c, err := handlestore.NewRequestStateCodec(ring, mode)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func toolOf(v vector) string {
	if v.Tool == nil {
		return ""
	}
	return *v.Tool
}

// sameJSON compares two JSON texts as values.
func sameJSON(t *testing.T, a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func TestRequestStateVectors(t *testing.T) {
	vs := loadVectors(t)
	t.Logf("vectors: %s", testkit.VectorsPath())
	if len(vs.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vs.Vectors {
		t.Run("opens/"+v.Name, func(t *testing.T) {
			got, ok := vs.codec(t, v).DecodeAt(v.Blob, v.Subject, toolOf(v), v.Now)
			if string(v.Expect) == "null" {
				if ok {
					t.Fatalf("opened %s; want refused", got)
				}
				return
			}
			if !ok || !sameJSON(t, got, v.Expect) {
				t.Fatalf("got %s (%v); want %s", got, ok, v.Expect)
			}
		})
		if v.Encodes {
			t.Run("seals/"+v.Name, func(t *testing.T) {
				nonce, _ := hex.DecodeString(vs.Nonce)
				var state any
				if err := json.Unmarshal(v.Expect, &state); err != nil {
					t.Fatal(err)
				}
				blob, err := vs.codec(t, v).EncodeAt(state, v.Subject, toolOf(v), vs.Exp, nonce)
				if err != nil || blob != v.Blob {
					t.Fatalf("sealed %q (%v)\nwant   %q", blob, err, v.Blob)
				}
			})
		}
	}
}
