package charttest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The release and namespace every test renders the chart as.
const (
	release   = "hs"
	namespace = "store"
	fullname  = "hs-handlestore"
)

// helmPath is the Helm binary deploy/install-helm.sh built (ci.sh passes
// it in HANDLESTORE_HELM).
func helmPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("HANDLESTORE_HELM")
	if p == "" {
		t.Skip("SKIPPED: HANDLESTORE_HELM is not set: run deploy/helm/test/ci.sh (or tests/tier.sh chart), which builds Helm and sets it")
	}
	return p
}

// chartDir is the chart under test.
const chartDir = "../handlestore"

// config is one way of installing the chart: its --set values and the
// API versions the target cluster serves (the CRDs the chart looks for).
type config struct {
	name        string
	set         []string
	apiVersions []string
	// What it should render.
	replicas, initialMembers int
	// "" for TLS off, else tls.mode.
	tls  string
	auth bool
}

// setArgs are c's values as flags (all `helm lint` takes).
func (c config) setArgs() []string {
	var a []string
	for _, s := range c.set {
		a = append(a, "--set", s)
	}
	return a
}

// args are c's values and API versions as `helm template` flags.
func (c config) args() []string {
	a := c.setArgs()
	for _, v := range c.apiVersions {
		a = append(a, "--api-versions", v)
	}
	return a
}

// runHelm runs Helm and answers with its standard output; an error holds
// its standard error.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmPath(t), args...)
	// Nothing of the machine's Helm setup (repositories, plugins) counts.
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-cluster"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

// doc is one rendered object: its YAML, the template it came from, and the
// object it decoded to.
type doc struct {
	source string
	yaml   []byte
	obj    any
}

type rendered struct {
	docs []doc
}

// render runs `helm template` for c and decodes every object strictly; any
// object that does not decode fails the test.
func render(t *testing.T, c config) *rendered {
	t.Helper()
	args := append([]string{"template", release, chartDir, "--namespace", namespace}, c.args()...)
	out, err := runHelm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	r := &rendered{}
	for _, d := range splitDocs(out) {
		obj, err := decodeStrict(d.yaml)
		if err != nil {
			t.Fatalf("%s (%s): %v\n%s", d.source, c.name, err, d.yaml)
		}
		d.obj = obj
		r.docs = append(r.docs, d)
	}
	if len(r.docs) == 0 {
		t.Fatalf("%s: helm template rendered nothing", c.name)
	}
	return r
}

// splitDocs cuts Helm's output at its `---` lines, keeping each
// document's `# Source:` and dropping documents that hold no object.
func splitDocs(out string) []doc {
	var docs []doc
	for _, part := range strings.Split("\n"+out, "\n---") {
		source := ""
		content := false
		for _, line := range strings.Split(part, "\n") {
			trimmed := strings.TrimSpace(line)
			if s, ok := strings.CutPrefix(trimmed, "# Source: "); ok && source == "" {
				source = s
			}
			if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				content = true
			}
		}
		if content {
			docs = append(docs, doc{source: source, yaml: []byte(part)})
		}
	}
	return docs
}

// decodeStrict decodes one YAML object into its kind's Go type the way
// the API server reads a request: field names case-sensitive, and an
// unknown or duplicated field is an error.
func decodeStrict(y []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &tm); err != nil {
		return nil, err
	}
	obj, err := newObject(tm.APIVersion, tm.Kind)
	if err != nil {
		return nil, err
	}
	strict, err := sigsjson.UnmarshalStrict(j, obj, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, errors.Join(strict...))
	}
	return obj, nil
}

// newObject is an empty object of the kind; a kind the chart is not
// expected to render is an error.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "v1 PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}, nil
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	case "batch/v1 Job":
		return &batchv1.Job{}, nil
	case "batch/v1 CronJob":
		return &batchv1.CronJob{}, nil
	case "cert-manager.io/v1 Issuer":
		return &Issuer{}, nil
	case "cert-manager.io/v1 Certificate":
		return &Certificate{}, nil
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &ServiceMonitor{}, nil
	case "monitoring.coreos.com/v1 PodMonitor":
		return &PodMonitor{}, nil
	case "monitoring.coreos.com/v1 PrometheusRule":
		return &PrometheusRule{}, nil
	}
	return nil, fmt.Errorf("an object of an unexpected kind: apiVersion %q, kind %q", apiVersion, kind)
}

type named interface{ GetName() string }

// all is every rendered object of type T.
func all[T any](r *rendered) []*T {
	var out []*T
	for _, d := range r.docs {
		if o, ok := d.obj.(*T); ok {
			out = append(out, o)
		}
	}
	return out
}

// one is the rendered object of type T named name; missing fails.
func one[T any](t *testing.T, r *rendered, name string) *T {
	t.Helper()
	for _, o := range all[T](r) {
		if any(o).(named).GetName() == name {
			return o
		}
	}
	var zero T
	t.Fatalf("no %T named %s rendered", zero, name)
	return nil
}

// has tells whether an object of type T named name was rendered.
func has[T any](r *rendered, name string) bool {
	for _, o := range all[T](r) {
		if any(o).(named).GetName() == name {
			return true
		}
	}
	return false
}

// rawOf is the YAML of the rendered object of type T named name.
func rawOf[T any](t *testing.T, r *rendered, name string) []byte {
	t.Helper()
	for _, d := range r.docs {
		if o, ok := d.obj.(*T); ok && any(o).(named).GetName() == name {
			return d.yaml
		}
	}
	t.Fatalf("no object named %s rendered", name)
	return nil
}
