package handlestore_test

import (
	"encoding/json"
	"os"
	"testing"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// TestRedeemedIDVectors holds the id a token is redeemed under to the
// shared vectors' "redemptions", which every client passes: replicas in
// any language then refuse each other's redeemed tokens.
func TestRedeemedIDVectors(t *testing.T) {
	raw, err := os.ReadFile(testkit.VectorsPath())
	if err != nil {
		t.Fatal(err)
	}
	var vs struct {
		Redemptions []struct {
			Token string `json:"token"`
			ID    string `json:"id"`
		} `json:"redemptions"`
	}
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs.Redemptions) == 0 {
		t.Fatal("no redemptions in the vectors")
	}
	for _, r := range vs.Redemptions {
		if got := handlestore.RedeemedID(r.Token); got != r.ID {
			t.Errorf("%q: id %s, want %s", r.Token, got, r.ID)
		}
		if err := handlestore.CheckHandleID(r.ID); err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
	}
	if handlestore.RedeemedID("v1.payload.tag") == handlestore.RedeemedID("v1.payload.tah") {
		t.Fatal("two tokens share an id")
	}
}
