package charttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The opt-in tier (tests/tier.sh kube): the chart installed on a real
// cluster, three members, a pod deleted while a client writes, and every
// write acknowledged read back afterwards. Skipped, saying why, unless
// HANDLESTORE_KUBE_IMAGE names an image of this build that the cluster
// can pull and the cluster of KUBECONFIG answers.
func TestOnARealCluster(t *testing.T) {
	image := os.Getenv("HANDLESTORE_KUBE_IMAGE")
	if image == "" {
		t.Skip("SKIPPED: the real-cluster tier: HANDLESTORE_KUBE_IMAGE is not set (an image of this build, e.g. registry.example/handlestore:dev, that the cluster can pull)")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("SKIPPED: the real-cluster tier: kubectl is not installed")
	}
	if out, err := kubectl(t, 15*time.Second, "version", "--request-timeout=10s"); err != nil {
		t.Skipf("SKIPPED: the real-cluster tier: no Kubernetes cluster answers (KUBECONFIG=%q): %v %s", os.Getenv("KUBECONFIG"), err, out)
	}
	helmPath(t)
	ns := "handlestore-test-" + randomSuffix(t)
	if out, err := kubectl(t, time.Minute, "create", "namespace", ns); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() {
		_, _ = runHelmWithCluster(t, "uninstall", release, "--namespace", ns, "--wait", "--timeout", "5m")
		_, _ = kubectl(t, 10*time.Minute, "delete", "namespace", ns, "--wait=true")
	})
	repo, tag := splitImage(image)
	install := []string{"install", release, chartDir, "--namespace", ns, "--wait", "--timeout", "15m",
		"--set", "image.repository=" + repo, "--set", "image.tag=" + tag}
	if out, err := runHelmWithCluster(t, install...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	// A client writes 300 keys through member 0's CLI (the client Service,
	// TLS, root's token from the pod's environment) while member 1 is
	// deleted; it prints the writes acknowledged.
	const writes = 300
	load := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do
		if handlestore kv put load/$i "$i" --timeout 30s >/dev/null 2>&1; then echo $i; fi
		i=$((i+1)); done`, writes)
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := kubectl(t, 10*time.Minute, "-n", ns, "exec", fullname+"-0", "--", "sh", "-c", load)
		done <- result{out, err}
	}()
	time.Sleep(3 * time.Second)
	if out, err := kubectl(t, 2*time.Minute, "-n", ns, "delete", "pod", fullname+"-1", "--wait=false"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("the writer: %v\n%s", res.err, res.out)
	}
	acked := strings.Fields(res.out)
	t.Logf("%d of %d writes acknowledged while member 1 was deleted and re-created", len(acked), writes)
	if out, err := kubectl(t, 10*time.Minute, "-n", ns, "rollout", "status", "statefulset/"+fullname, "--timeout=10m"); err != nil {
		t.Fatalf("the members did not all come back: %v %s", err, out)
	}

	// Every acknowledged write is there, read through member 1, the one
	// that was re-created.
	check := `for i in "$@"; do v="$(handlestore kv get load/$i --timeout 30s)" || { echo "missing $i"; continue; }
		[ "$v" = "$i" ] || echo "load/$i holds $v"; done`
	args := append([]string{"-n", ns, "exec", fullname + "-1", "--", "sh", "-c", check, "check"}, acked...)
	out, err := kubectl(t, 10*time.Minute, args...)
	if err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("acknowledged writes lost or changed: %v\n%s", err, out)
	}
}

func kubectl(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// runHelmWithCluster runs Helm against the cluster of KUBECONFIG.
func runHelmWithCluster(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmPath(t), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func splitImage(image string) (repo, tag string) {
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[:colon], image[colon+1:]
	}
	return image, "latest"
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b) + strconv.Itoa(os.Getpid()%1000)
}
