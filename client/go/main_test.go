package handlestore_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// TestMain says once, in any output mode, why the cluster tests skip.
func TestMain(m *testing.M) {
	if why := testkit.SkipReason(); why != "" {
		fmt.Println("SKIPPED: the Go client's cluster tests:", why)
	}
	os.Exit(m.Run())
}
