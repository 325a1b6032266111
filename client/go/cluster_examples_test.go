package handlestore_test

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// TestExamplesOnACluster runs the examples that need a cluster (those
// without an Output line, which go test only compiles) against a test
// cluster named in the environment they read, each in a namespace of its
// own, and checks what they print.
func TestExamplesOnACluster(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	t.Setenv("HANDLESTORE_ENDPOINTS", strings.Join(cluster.Endpoints(), ","))
	for _, ex := range []struct {
		name string
		run  func()
		want string
	}{
		{"Example", Example, "true [sku-1]\nfalse <nil>\n"},
		{"ExampleClient_Conn", ExampleClient_Conn, "the cluster has a leader: true\nhello\n"},
		{"ExampleIfRevision", ExampleIfRevision, "taken, at the first store's revision: true\nreleased: 1\n"},
		{"ExampleOutcome", ExampleOutcome, "false [sku-2]\n"},
	} {
		t.Run(ex.name, func(t *testing.T) {
			t.Setenv("HANDLESTORE_NAMESPACE", "go-"+strings.ToLower(ex.name))
			if got := printed(t, ex.run); got != ex.want {
				t.Fatalf("printed %q, want %q", got, ex.want)
			}
		})
	}
}

// printed is what run prints on stdout; a panic fails the test.
func printed(t *testing.T, run func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	panicked := func() (p any) {
		defer func() { p = recover() }()
		run()
		return nil
	}()
	os.Stdout = stdout
	_ = w.Close()
	text := <-out
	if panicked != nil {
		t.Fatalf("panicked: %v\nafter printing %q", panicked, text)
	}
	return text
}
