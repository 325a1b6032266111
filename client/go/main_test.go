package handlestore_test

import (
	"testing"

	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// TestMain says once, in any output mode, why the cluster tests skip.
func TestMain(m *testing.M) { testkit.Main(m, "the Go client's cluster tests") }
