package handlestore_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

func TestTLS(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{TLS: true})

	t.Run("a client trusting the cluster's CA reads and writes", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		tool := cluster.Client(handlestore.Config{Namespace: "go-tls"}).StateTool(handlestore.StateToolOptions{})
		got(tool.Store(ctx, "k", map[string]string{"over": "tls"}))(t)
		var https []string
		for _, e := range cluster.Endpoints() {
			https = append(https, "https://"+e)
		}
		other := cluster.Client(handlestore.Config{Namespace: "go-tls", Endpoints: https})
		var v map[string]string
		if ok, err := other.StateTool(handlestore.StateToolOptions{}).Get(ctx, "k", &v); !ok || err != nil || v["over"] != "tls" {
			t.Fatalf("%v %v %v", v, ok, err)
		}
	})

	t.Run("a node whose certificate is not from the trusted CA is refused at once", func(t *testing.T) {
		other := filepath.Join(cluster.Root, "other-ca")
		if out, err := exec.Command(cluster.Bin, "certs", "--dir", other, "--node", "1=localhost,127.0.0.1").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		wrong := got(handlestore.TLSFromFiles(filepath.Join(other, "ca.pem"), "", ""))(t)
		c := cluster.Client(handlestore.Config{Namespace: "go-tls", TLS: wrong, CallTimeout: 20 * time.Second})
		start := time.Now()
		_, err := c.StateTool(handlestore.StateToolOptions{}).Exists(testkit.Ctx(t), "k")
		if !errors.Is(err, handlestore.ErrUnauthenticated) {
			t.Fatalf("got %v", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("took %v: retried until the deadline", took)
		}
	})
}
