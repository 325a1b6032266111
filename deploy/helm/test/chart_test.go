package charttest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base32"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// The API versions of the Prometheus Operator's CRDs, as a cluster that
// has them serves them.
var monitoringAPIs = []string{
	"monitoring.coreos.com/v1",
	"monitoring.coreos.com/v1/ServiceMonitor",
	"monitoring.coreos.com/v1/PodMonitor",
	"monitoring.coreos.com/v1/PrometheusRule",
}

// configs is every configuration the chart is linted and rendered in.
var configs = []config{
	{name: "default", replicas: 3, initialMembers: 3, tls: "self-signed", auth: true},
	{name: "tls-from-a-secret", set: []string{"tls.mode=secret", "tls.secretName=my-certs"},
		replicas: 3, initialMembers: 3, tls: "secret", auth: true},
	{name: "cert-manager", set: []string{"tls.mode=cert-manager"},
		replicas: 3, initialMembers: 3, tls: "cert-manager", auth: true},
	{name: "cert-manager-own-issuer", set: []string{"tls.mode=cert-manager",
		"tls.certManager.issuerRef.name=corp-ca", "tls.certManager.issuerRef.kind=ClusterIssuer"},
		replicas: 3, initialMembers: 3, tls: "cert-manager", auth: true},
	{name: "five-members", set: []string{"initialMembers=5", "replicas=5"},
		replicas: 5, initialMembers: 5, tls: "self-signed", auth: true},
	{name: "scaled-out-to-five", set: []string{"replicas=5"},
		replicas: 5, initialMembers: 3, tls: "self-signed", auth: true},
	{name: "network-policy", set: []string{"networkPolicy.enabled=true"},
		replicas: 3, initialMembers: 3, tls: "self-signed", auth: true},
	{name: "network-policy-listed-clients", set: []string{"networkPolicy.enabled=true",
		"networkPolicy.clientFrom[0].podSelector.matchLabels.app=cart-server"},
		replicas: 3, initialMembers: 3, tls: "self-signed", auth: true},
	{name: "in-the-clear", set: []string{"tls.enabled=false", "auth.enabled=false"},
		replicas: 3, initialMembers: 3, tls: "", auth: false},
	{name: "backup-restore-liveness-monitoring", set: []string{"backup.enabled=true",
		"restore.claimName=old-backups", "restore.file=hs-handlestore-20261201T030000Z.hsbak",
		"probes.liveness.enabled=true", "auth.existingSecret=my-root-token"},
		apiVersions: monitoringAPIs, replicas: 3, initialMembers: 3, tls: "self-signed", auth: true},
	{name: "pod-monitor", set: []string{"metrics.monitor=PodMonitor"},
		apiVersions: monitoringAPIs, replicas: 3, initialMembers: 3, tls: "self-signed", auth: true},
	{name: "one-member", set: []string{"initialMembers=1", "replicas=1"},
		replicas: 1, initialMembers: 1, tls: "self-signed", auth: true},
}

func TestHelmLintIsClean(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"lint", chartDir, "--strict", "--namespace", namespace}, c.setArgs()...)
			out, err := runHelm(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Fatalf("helm lint:\n%s", out)
			}
		})
	}
}

func TestEveryConfigurationRendersAClusterThatHolds(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, c)
			checkStatefulSet(t, c, r)
			checkServices(t, r)
			checkPodDisruptionBudget(t, c, r)
			checkHookJobs(t, c, r)
			checkPodsAreLockedDown(t, r)
			checkTLS(t, c, r)
			checkRootToken(t, c, r)
		})
	}
}

// memberLabels selects the members (and nothing else).
var memberLabels = map[string]string{
	"app.kubernetes.io/name":      "handlestore",
	"app.kubernetes.io/instance":  release,
	"app.kubernetes.io/component": "member",
}

func memberHost(ordinal int) string {
	return fmt.Sprintf("%s-%d.%s-peers.%s.svc.cluster.local", fullname, ordinal, fullname, namespace)
}

// initialCluster is the --initial-cluster the founding members must get.
func initialCluster(initialMembers int) string {
	var entries []string
	for i := range initialMembers {
		h := memberHost(i)
		entries = append(entries, fmt.Sprintf("%d=%s:7401/%s:7410", i+1, h, h))
	}
	return strings.Join(entries, ",")
}

func checkStatefulSet(t *testing.T, c config, r *rendered) {
	t.Helper()
	sts := one[appsv1.StatefulSet](t, r, fullname)
	s := sts.Spec
	if s.Replicas == nil || int(*s.Replicas) != c.replicas {
		t.Errorf("replicas %v, want %d", s.Replicas, c.replicas)
	}
	if s.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q, want Parallel", s.PodManagementPolicy)
	}
	if s.ServiceName != fullname+"-peers" {
		t.Errorf("serviceName %q", s.ServiceName)
	}
	p := s.PersistentVolumeClaimRetentionPolicy
	if p == nil || p.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType ||
		p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("persistentVolumeClaimRetentionPolicy %+v, want whenScaled Delete, whenDeleted Retain", p)
	}
	if len(s.VolumeClaimTemplates) != 1 || s.VolumeClaimTemplates[0].Name != "data" {
		t.Errorf("want one volume claim per member, named data: %+v", s.VolumeClaimTemplates)
	}
	if !reflect.DeepEqual(s.Selector.MatchLabels, memberLabels) {
		t.Errorf("selector %v", s.Selector.MatchLabels)
	}
	pod := s.Template.Spec
	node := container(t, pod.Containers, "handlestore")
	checkProbes(t, c, node)
	checkSpread(t, pod)
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("no terminationGracePeriodSeconds")
	}
	// preStop, then a leader's hand-over (up to 3 s) and calls in flight
	// (up to 5 s), then RocksDB's flush: more than preStop + 8 s.
	preStop := preStopSeconds(t, node)
	if grace := *pod.TerminationGracePeriodSeconds; grace <= int64(preStop)+8 {
		t.Errorf("terminationGracePeriodSeconds %d leaves no time after preStop (%d s), the hand-over and calls in flight", grace, preStop)
	}
	for _, ordinal := range []int{0, c.initialMembers - 1, c.initialMembers, c.replicas - 1} {
		checkNodeCommand(t, c, node, ordinal)
	}
	if c.replicas > c.initialMembers {
		args := runNodeScript(t, c, node, c.replicas-1)
		if !slices.Contains(args, "--join") {
			t.Errorf("member %d of %d (founding %d) does not join: %q", c.replicas-1, c.replicas, c.initialMembers, args)
		}
	}
}

func container(t *testing.T, cs []corev1.Container, name string) corev1.Container {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

// checkProbes: readiness on /readyz, startup on /healthz, both on the
// client port in its scheme; no liveness unless asked for.
func checkProbes(t *testing.T, c config, node corev1.Container) {
	t.Helper()
	scheme := corev1.URISchemeHTTP
	if c.tls != "" {
		scheme = corev1.URISchemeHTTPS
	}
	clientPort := containerPort(t, node, "client")
	if clientPort != 7401 {
		t.Errorf("client port %d", clientPort)
	}
	for _, probe := range []struct {
		what string
		p    *corev1.Probe
		path string
	}{{"readiness", node.ReadinessProbe, "/readyz"}, {"startup", node.StartupProbe, "/healthz"}} {
		if probe.p == nil || probe.p.HTTPGet == nil {
			t.Errorf("no %s probe over HTTP", probe.what)
			continue
		}
		g := probe.p.HTTPGet
		if g.Path != probe.path || g.Scheme != scheme || resolvePort(t, node, g.Port.String()) != clientPort {
			t.Errorf("%s probe: %s %s on port %s, want %s %s on the client port", probe.what, g.Scheme, g.Path, g.Port.String(), scheme, probe.path)
		}
	}
	if s := node.StartupProbe; s != nil && int(s.PeriodSeconds)*int(s.FailureThreshold) < 300 {
		t.Errorf("startup probe gives up after %d s: not patient", int(s.PeriodSeconds)*int(s.FailureThreshold))
	}
	wantLiveness := slices.Contains(c.set, "probes.liveness.enabled=true")
	if (node.LivenessProbe != nil) != wantLiveness {
		t.Errorf("liveness probe %v, want it only when asked for", node.LivenessProbe != nil)
	}
	if l := node.LivenessProbe; l != nil && (l.Exec == nil || !slices.Contains(l.Exec.Command, "health")) {
		t.Errorf("liveness probe is not `handlestore health`: %+v", l)
	}
}

func containerPort(t *testing.T, c corev1.Container, name string) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	t.Fatalf("container %s has no port named %s", c.Name, name)
	return 0
}

// resolvePort is a probe's or policy's port, by name or number.
func resolvePort(t *testing.T, c corev1.Container, port string) int {
	t.Helper()
	if n, err := strconv.Atoi(port); err == nil {
		return n
	}
	return containerPort(t, c, port)
}

func preStopSeconds(t *testing.T, node corev1.Container) int {
	t.Helper()
	if node.Lifecycle == nil || node.Lifecycle.PreStop == nil || node.Lifecycle.PreStop.Exec == nil {
		t.Fatal("no preStop delay")
	}
	cmd := node.Lifecycle.PreStop.Exec.Command
	n, err := strconv.Atoi(cmd[len(cmd)-1])
	if cmd[0] != "sleep" || err != nil || n < 1 {
		t.Fatalf("preStop %q is not a sleep", cmd)
	}
	return n
}

func checkSpread(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	a := pod.Affinity
	if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Errorf("no pod anti-affinity by default")
	} else if term := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm; !reflect.DeepEqual(term.LabelSelector.MatchLabels, memberLabels) {
		t.Errorf("anti-affinity selects %v", term.LabelSelector.MatchLabels)
	}
	if len(pod.TopologySpreadConstraints) == 0 {
		t.Errorf("no topology spread by default")
	}
}

// checkNodeCommand runs the member's start script for one ordinal and
// checks the node's flags.
func checkNodeCommand(t *testing.T, c config, node corev1.Container, ordinal int) {
	t.Helper()
	args := runNodeScript(t, c, node, ordinal)
	flag := func(name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			return ""
		}
		return args[i+1]
	}
	if args[0] != "node" {
		t.Fatalf("ordinal %d runs %q", ordinal, args)
	}
	if got := flag("--id"); got != strconv.Itoa(ordinal+1) {
		t.Errorf("ordinal %d: --id %s, want %d", ordinal, got, ordinal+1)
	}
	if got, want := flag("--initial-cluster"), initialCluster(c.initialMembers); got != want {
		t.Errorf("ordinal %d: --initial-cluster\n %s\nwant\n %s", ordinal, got, want)
	}
	if got := flag("--advertise"); got != memberHost(ordinal)+":7401" {
		t.Errorf("ordinal %d: --advertise %s", ordinal, got)
	}
	if got := flag("--peer-advertise"); got != memberHost(ordinal)+":7410" {
		t.Errorf("ordinal %d: --peer-advertise %s", ordinal, got)
	}
	joins := ordinal >= c.initialMembers
	if got := flag("--join"); joins != (got != "") {
		t.Errorf("ordinal %d of founding %d: --join %q", ordinal, c.initialMembers, got)
	} else if joins {
		scheme := "http"
		if c.tls != "" {
			scheme = "https"
		}
		if want := fmt.Sprintf("%s://%s.%s.svc:7401", scheme, fullname, namespace); got != want {
			t.Errorf("--join %s, want the client Service %s", got, want)
		}
		if flag("--initial-cluster-state") != "existing" {
			t.Errorf("a joining member founds: %q", args)
		}
	}
	if c.tls != "" {
		id := ordinal + 1
		for f, want := range map[string]string{
			"--tls-cert": fmt.Sprintf("node-%d.pem", id), "--tls-key": fmt.Sprintf("node-%d-key.pem", id),
			"--peer-tls-cert": fmt.Sprintf("node-%d.pem", id), "--peer-tls-key": fmt.Sprintf("node-%d-key.pem", id),
			"--peer-tls-ca": "ca.pem",
		} {
			if filepath.Base(flag(f)) != want {
				t.Errorf("ordinal %d: %s %s, want .../%s", ordinal, f, flag(f), want)
			}
		}
		if slices.Contains(args, "--insecure") {
			t.Errorf("TLS on, and --insecure")
		}
	} else if !slices.Contains(args, "--insecure") {
		t.Errorf("TLS off needs --insecure to listen beyond loopback: %q", args)
	}
	if flag("--data") != "/data/handlestore" {
		t.Errorf("--data %s: not under the volume mounted at /data", flag("--data"))
	}
}

// runNodeScript runs the container's command with /bin/sh as the pod
// would, for the pod of this ordinal, with a `handlestore` that prints
// its arguments and the certificate files in a directory of the test's
// own; answers with the arguments.
func runNodeScript(t *testing.T, c config, node corev1.Container, ordinal int) []string {
	t.Helper()
	if len(node.Command) < 3 || node.Command[0] != "/bin/sh" || node.Command[1] != "-c" {
		t.Fatalf("the node's command is not a shell script: %q", node.Command)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	certs := filepath.Join(dir, "tls")
	for _, d := range []string{bin, certs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"
	if err := os.WriteFile(filepath.Join(bin, "handlestore"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	id := ordinal + 1
	for _, f := range []string{"ca.pem", fmt.Sprintf("node-%d.pem", id), fmt.Sprintf("node-%d-key.pem", id)} {
		if err := os.WriteFile(filepath.Join(certs, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := strings.ReplaceAll(node.Command[2], "/tls/", certs+"/")
	cmd := exec.Command("/bin/sh", append([]string{"-c", script}, node.Command[3:]...)...)
	cmd.Args = append(cmd.Args, node.Args...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", fmt.Sprintf("HOSTNAME=%s-%d", fullname, ordinal)}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: ordinal %d: the node's script failed: %v\n%s", c.name, ordinal, err, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

func checkServices(t *testing.T, r *rendered) {
	t.Helper()
	peers := one[corev1.Service](t, r, fullname+"-peers")
	if peers.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("the peer Service is not headless: clusterIP %q", peers.Spec.ClusterIP)
	}
	if !peers.Spec.PublishNotReadyAddresses {
		t.Errorf("the peer Service does not publish members that are not ready: they could not find each other to elect a leader")
	}
	clients := one[corev1.Service](t, r, fullname)
	if clients.Spec.PublishNotReadyAddresses || clients.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Errorf("the client Service must list ready members only, behind one address")
	}
	for _, s := range []*corev1.Service{peers, clients} {
		if !reflect.DeepEqual(s.Spec.Selector, memberLabels) {
			t.Errorf("Service %s selects %v", s.Name, s.Spec.Selector)
		}
	}
}

func checkPodDisruptionBudget(t *testing.T, c config, r *rendered) {
	t.Helper()
	pdb := one[policyv1.PodDisruptionBudget](t, r, fullname)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MinAvailable != nil {
		t.Fatalf("want maxUnavailable alone: %+v", pdb.Spec)
	}
	quorum := c.replicas/2 + 1
	down := pdb.Spec.MaxUnavailable.IntValue()
	if c.replicas-down < quorum {
		t.Errorf("%d members, maxUnavailable %d: a drain could leave %d, below the quorum of %d", c.replicas, down, c.replicas-down, quorum)
	}
	if want := c.replicas - quorum; down != want {
		t.Errorf("%d members: maxUnavailable %d, want %d", c.replicas, down, want)
	}
	if !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, memberLabels) {
		t.Errorf("the PDB selects %v", pdb.Spec.Selector.MatchLabels)
	}
}

// checkHookJobs: the scale-in Job runs before every upgrade and rollback
// and shrinks to the replica count; the auth Job runs after install and
// upgrade.
func checkHookJobs(t *testing.T, c config, r *rendered) {
	t.Helper()
	shrink := one[batchv1.Job](t, r, fullname+"-scale-in")
	hooks := strings.Split(shrink.Annotations["helm.sh/hook"], ",")
	if !slices.Contains(hooks, "pre-upgrade") || !slices.Contains(hooks, "pre-rollback") {
		t.Errorf("the scale-in Job runs at %q, want pre-upgrade and pre-rollback", hooks)
	}
	script := strings.Join(container(t, shrink.Spec.Template.Spec.Containers, "scale-in").Command, " ")
	m := regexp.MustCompile(`handlestore member shrink --to (\d+)\b`).FindStringSubmatch(script)
	if m == nil || m[1] != strconv.Itoa(c.replicas) {
		t.Errorf("the scale-in Job does not shrink to %d: %s", c.replicas, script)
	}
	if !c.auth {
		if has[batchv1.Job](r, fullname+"-auth") {
			t.Errorf("auth off, and an auth Job")
		}
		return
	}
	auth := one[batchv1.Job](t, r, fullname+"-auth")
	hooks = strings.Split(auth.Annotations["helm.sh/hook"], ",")
	if !slices.Contains(hooks, "post-install") || !slices.Contains(hooks, "post-upgrade") {
		t.Errorf("the auth Job runs at %q", hooks)
	}
	cmd := container(t, auth.Spec.Template.Spec.Containers, "auth").Command
	if !slices.Equal(cmd[:5], []string{"handlestore", "auth", "enable", "--root-token-file", "/auth/token"}) {
		t.Errorf("the auth Job runs %q", cmd)
	}
}

// podSpecs is every pod template the chart renders, by owner.
func podSpecs(r *rendered) map[string]corev1.PodSpec {
	out := map[string]corev1.PodSpec{}
	for _, s := range all[appsv1.StatefulSet](r) {
		out["StatefulSet "+s.Name] = s.Spec.Template.Spec
	}
	for _, j := range all[batchv1.Job](r) {
		out["Job "+j.Name] = j.Spec.Template.Spec
	}
	for _, j := range all[batchv1.CronJob](r) {
		out["CronJob "+j.Name] = j.Spec.JobTemplate.Spec.Template.Spec
	}
	return out
}

// checkPodsAreLockedDown: every pod non-root, every container with a
// read-only root file system, no privilege escalation, no capabilities,
// and no service account token.
func checkPodsAreLockedDown(t *testing.T, r *rendered) {
	t.Helper()
	for owner, pod := range podSpecs(r) {
		if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: pods may run as root", owner)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("%s: a service account token is mounted", owner)
		}
		for _, c := range append(pod.InitContainers, pod.Containers...) {
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("%s: container %s is not locked down: %+v", owner, c.Name, sc)
			}
		}
	}
}

func checkTLS(t *testing.T, c config, r *rendered) {
	t.Helper()
	switch c.tls {
	case "self-signed":
		checkSelfSignedCertificates(t, c, r)
	case "cert-manager":
		checkCertManager(t, c, r)
	case "secret":
		if has[corev1.Secret](r, fullname+"-tls") || has[corev1.Secret](r, fullname+"-ca") {
			t.Errorf("tls.mode=secret, and the chart makes certificates too")
		}
		vol := volume(t, one[appsv1.StatefulSet](t, r, fullname).Spec.Template.Spec, "tls")
		if vol.Secret == nil || vol.Secret.SecretName != "my-certs" {
			t.Errorf("the members do not mount the Secret given: %+v", vol)
		}
	}
}

func volume(t *testing.T, pod corev1.PodSpec, name string) corev1.Volume {
	t.Helper()
	for _, v := range pod.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no volume %s", name)
	return corev1.Volume{}
}

// checkSelfSignedCertificates: one certificate per member, of the chart's
// CA, good for server and client use, naming node-ID (what peers check)
// and the member's DNS name, with its key; the CA's key in a Secret of
// its own that no pod mounts.
func checkSelfSignedCertificates(t *testing.T, c config, r *rendered) {
	t.Helper()
	secret := one[corev1.Secret](t, r, fullname+"-tls")
	if _, ok := secret.Data["ca-key.pem"]; ok {
		t.Errorf("the CA's key is in the Secret the members mount")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["ca.pem"]) {
		t.Fatalf("ca.pem holds no certificate")
	}
	for i := range c.replicas {
		id := i + 1
		certPEM, keyPEM := secret.Data[fmt.Sprintf("node-%d.pem", id)], secret.Data[fmt.Sprintf("node-%d-key.pem", id)]
		if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
			t.Errorf("member %d: certificate and key: %v", i, err)
			continue
		}
		block, _ := pem.Decode(certPEM)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{memberHost(i), fmt.Sprintf("node-%d", id), fullname + "." + namespace + ".svc", "localhost"} {
			for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
				opts := x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}}
				if _, err := cert.Verify(opts); err != nil {
					t.Errorf("member %d's certificate for %s (usage %v): %v", i, name, usage, err)
				}
			}
		}
	}
	ca := one[corev1.Secret](t, r, fullname+"-ca")
	if _, ok := ca.Data["ca-key.pem"]; !ok {
		t.Errorf("no CA key kept: members added later could not get a certificate")
	}
	for owner, pod := range podSpecs(r) {
		for _, v := range pod.Volumes {
			if v.Secret != nil && v.Secret.SecretName == ca.Name {
				t.Errorf("%s mounts the CA's key", owner)
			}
		}
	}
}

// checkCertManager: one Certificate per member, its Secret among those
// the members mount (for every member the release may grow to), naming
// node-ID and the member's DNS name, for server and client use.
func checkCertManager(t *testing.T, c config, r *rendered) {
	t.Helper()
	pod := one[appsv1.StatefulSet](t, r, fullname).Spec.Template.Spec
	vol := volume(t, pod, "tls")
	if vol.Projected == nil {
		t.Fatalf("cert-manager: the members' certificates are not projected: %+v", vol)
	}
	mounted := map[string]bool{}
	for _, s := range vol.Projected.Sources {
		if s.Secret != nil {
			mounted[s.Secret.Name] = true
		}
	}
	if len(mounted) != 9 {
		t.Errorf("cert-manager: %d member Secrets mounted, want maxReplicas (9): scaling would change the pod template", len(mounted))
	}
	certs := all[Certificate](r)
	members := 0
	for _, cert := range certs {
		if cert.Spec.IsCA {
			continue
		}
		members++
		id, err := strconv.Atoi(strings.TrimPrefix(cert.Spec.CommonName, "node-"))
		if err != nil {
			t.Fatalf("certificate %s names %q", cert.Name, cert.Spec.CommonName)
		}
		if !slices.Contains(cert.Spec.DNSNames, memberHost(id-1)) || !slices.Contains(cert.Spec.DNSNames, cert.Spec.CommonName) {
			t.Errorf("certificate %s: DNS names %q", cert.Name, cert.Spec.DNSNames)
		}
		if !mounted[cert.Spec.SecretName] {
			t.Errorf("certificate %s writes %s, which no member mounts", cert.Name, cert.Spec.SecretName)
		}
		if !slices.Contains(cert.Spec.Usages, "server auth") || !slices.Contains(cert.Spec.Usages, "client auth") {
			t.Errorf("certificate %s: usages %q (peers need client auth too)", cert.Name, cert.Spec.Usages)
		}
	}
	if members != c.replicas {
		t.Errorf("%d member certificates for %d members", members, c.replicas)
	}
	own := slices.Contains(c.set, "tls.certManager.issuerRef.name=corp-ca")
	if got := len(all[Issuer](r)); (got == 0) != own {
		t.Errorf("%d Issuers rendered (own issuer given: %v)", got, own)
	}
}

// tokenPattern is a token the node parses (node/src/api/auth/token.rs):
// hs1_, 10 bytes and 32 bytes in unpadded base32.
var tokenPattern = regexp.MustCompile(`^hs1_([A-Z2-7]{16})_([A-Z2-7]{52})$`)

func checkRootToken(t *testing.T, c config, r *rendered) {
	t.Helper()
	made := has[corev1.Secret](r, fullname+"-root-token")
	wantMade := c.auth && !strings.Contains(strings.Join(c.set, " "), "auth.existingSecret=")
	if made != wantMade {
		t.Fatalf("root token Secret rendered: %v, want %v", made, wantMade)
	}
	if !made {
		return
	}
	token := string(one[corev1.Secret](t, r, fullname+"-root-token").Data["token"])
	if err := wellFormedToken(token); err != nil {
		t.Errorf("the chart's root token: %v", err)
	}
}

// wellFormedToken checks a token as the node will: base32 without
// padding, whose unused trailing bits are zero.
func wellFormedToken(token string) error {
	m := tokenPattern.FindStringSubmatch(token)
	if m == nil {
		return fmt.Errorf("%q is not hs1_<16 base32>_<52 base32>", token)
	}
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	for _, part := range []struct {
		text string
		size int
	}{{m[1], 10}, {m[2], 32}} {
		raw, err := enc.DecodeString(part.text)
		if err != nil || len(raw) != part.size {
			return fmt.Errorf("%q does not decode to %d bytes: %v", part.text, part.size, err)
		}
		// Encoded again it is the same text: the unused trailing bits
		// are zero, as the node's decoder requires.
		if enc.EncodeToString(raw) != part.text {
			return fmt.Errorf("%q has trailing bits set", part.text)
		}
	}
	return nil
}

func TestTwoRendersMakeDifferentTokensAndCertificates(t *testing.T) {
	a, b := render(t, configs[0]), render(t, configs[0])
	for _, name := range []string{fullname + "-root-token", fullname + "-tls"} {
		if reflect.DeepEqual(one[corev1.Secret](t, a, name).Data, one[corev1.Secret](t, b, name).Data) {
			t.Errorf("%s is the same in two installs: not random", name)
		}
	}
}

func TestNetworkPolicyAdmitsOnlyMembersToThePeerPort(t *testing.T) {
	for _, c := range configs {
		if !slices.Contains(c.set, "networkPolicy.enabled=true") {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			r := render(t, c)
			node := container(t, one[appsv1.StatefulSet](t, r, fullname).Spec.Template.Spec.Containers, "handlestore")
			np := one[networkingv1.NetworkPolicy](t, r, fullname)
			if err := peerPortMembersOnly(np, node); err != nil {
				t.Error(err)
			}
		})
	}
	if r := render(t, configs[0]); len(all[networkingv1.NetworkPolicy](r)) != 0 {
		t.Errorf("a NetworkPolicy by default")
	}
}

// peerPortMembersOnly: the policy applies to the members, every rule
// names its ports, and each rule that opens the peer port admits exactly
// the members.
func peerPortMembersOnly(np *networkingv1.NetworkPolicy, node corev1.Container) error {
	if !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, memberLabels) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		return fmt.Errorf("the policy does not govern the members' ingress: %+v", np.Spec)
	}
	peer := -1
	for _, p := range node.Ports {
		if p.Name == "peer" {
			peer = int(p.ContainerPort)
		}
	}
	opened := false
	for i, rule := range np.Spec.Ingress {
		if len(rule.Ports) == 0 {
			return fmt.Errorf("ingress rule %d names no port: it opens the peer port to %v", i, rule.From)
		}
		covers := false
		for _, p := range rule.Ports {
			switch {
			case p.Port == nil:
				covers = true
			case p.Port.String() == "peer" || p.Port.IntValue() == peer:
				covers = true
			case p.EndPort != nil && p.Port.IntValue() <= peer && peer <= int(*p.EndPort):
				covers = true
			}
		}
		if !covers {
			continue
		}
		opened = true
		if len(rule.From) != 1 {
			return fmt.Errorf("ingress rule %d opens the peer port to %d kinds of peers, want the members alone: %+v", i, len(rule.From), rule.From)
		}
		from := rule.From[0]
		if from.PodSelector == nil || from.NamespaceSelector != nil || from.IPBlock != nil ||
			len(from.PodSelector.MatchExpressions) != 0 || !reflect.DeepEqual(from.PodSelector.MatchLabels, memberLabels) {
			return fmt.Errorf("ingress rule %d opens the peer port to %+v, not the members alone", i, from)
		}
	}
	if !opened {
		return fmt.Errorf("no rule lets the members reach each other's peer port")
	}
	return nil
}

// The test of the test: a policy that lets anyone, or every pod of the
// release, reach the peer port is refused.
func TestThePeerPortCheckRefusesAWiderPolicy(t *testing.T) {
	c := configs[slices.IndexFunc(configs, func(c config) bool { return c.name == "network-policy" })]
	r := render(t, c)
	node := container(t, one[appsv1.StatefulSet](t, r, fullname).Spec.Template.Spec.Containers, "handlestore")
	good := one[networkingv1.NetworkPolicy](t, r, fullname)
	for name, widen := range map[string]func(*networkingv1.NetworkPolicy){
		"a rule with no ports": func(np *networkingv1.NetworkPolicy) { np.Spec.Ingress[1].Ports = nil },
		"anyone":               func(np *networkingv1.NetworkPolicy) { np.Spec.Ingress[0].From = nil },
		"the whole release": func(np *networkingv1.NetworkPolicy) {
			delete(np.Spec.Ingress[0].From[0].PodSelector.MatchLabels, "app.kubernetes.io/component")
		},
	} {
		np := good.DeepCopy()
		widen(np)
		if err := peerPortMembersOnly(np, node); err == nil {
			t.Errorf("%s: not refused", name)
		}
	}
}

func TestMonitoringRendersOnlyWhereItsCRDsExist(t *testing.T) {
	if r := render(t, configs[0]); len(all[ServiceMonitor](r))+len(all[PodMonitor](r))+len(all[PrometheusRule](r)) != 0 {
		t.Errorf("monitoring objects rendered for a cluster without the Prometheus Operator")
	}
	r := render(t, configs[slices.IndexFunc(configs, func(c config) bool { return c.apiVersions != nil })])
	sm := one[ServiceMonitor](t, r, fullname)
	peers := one[corev1.Service](t, r, fullname+"-peers")
	for k, v := range sm.Spec.Selector.MatchLabels {
		if peers.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s; the peer Service has %q", k, v, peers.Labels[k])
		}
	}
	if one[corev1.Service](t, r, fullname).Labels["app.kubernetes.io/component"] == sm.Spec.Selector.MatchLabels["app.kubernetes.io/component"] {
		t.Errorf("the ServiceMonitor selects the client Service too (ready members only)")
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" {
		t.Errorf("endpoints %+v", sm.Spec.Endpoints)
	}
	checkAlertRules(t, one[PrometheusRule](t, r, fullname))
}

// checkAlertRules: the PrometheusRule holds deploy/prometheus/alerts.yml's
// rules, unchanged ({{ $labels }} and all), and the chart's copy of the
// file is the same file.
func checkAlertRules(t *testing.T, rule *PrometheusRule) {
	t.Helper()
	original, err := os.ReadFile("../../prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(chartDir, "files", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(original, copied) {
		t.Errorf("deploy/helm/handlestore/files/alerts.yml differs from deploy/prometheus/alerts.yml: cp deploy/prometheus/alerts.yml deploy/helm/handlestore/files/")
	}
	var want RuleFile
	if err := yaml.UnmarshalStrict(original, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rule.Spec, want) {
		t.Errorf("the PrometheusRule differs from alerts.yml")
	}
	if len(want.Groups) == 0 || len(want.Groups[0].Rules) == 0 {
		t.Errorf("alerts.yml holds no rule")
	}
}

func TestBackupsRestoreAndTheExistingTokenSecret(t *testing.T) {
	r := render(t, configs[slices.IndexFunc(configs, func(c config) bool { return c.name == "backup-restore-liveness-monitoring" })])
	cron := one[batchv1.CronJob](t, r, fullname+"-backup")
	pod := cron.Spec.JobTemplate.Spec.Template.Spec
	script := strings.Join(container(t, pod.Containers, "backup").Command, " ")
	if !strings.Contains(script, "handlestore snapshot save") {
		t.Errorf("the backup CronJob does not save a snapshot: %s", script)
	}
	if v := volume(t, pod, "backups"); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != fullname+"-backups" {
		t.Errorf("backups go to %+v", v)
	}
	if !has[corev1.PersistentVolumeClaim](r, fullname+"-backups") {
		t.Errorf("no backup volume claim")
	}
	if cron.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("two backups may run at once")
	}
	sts := one[appsv1.StatefulSet](t, r, fullname)
	restore := container(t, sts.Spec.Template.Spec.InitContainers, "restore")
	if s := strings.Join(restore.Command, " "); !strings.Contains(s, "handlestore snapshot restore") ||
		!strings.Contains(s, "/restore/hs-handlestore-20261201T030000Z.hsbak") || !strings.Contains(s, initialCluster(3)) {
		t.Errorf("the restore init container: %s", s)
	}
	for owner, spec := range podSpecs(r) {
		for _, v := range spec.Volumes {
			if v.Name == "auth" && (v.Secret == nil || v.Secret.SecretName != "my-root-token") {
				t.Errorf("%s takes root's token from %+v, not the Secret given", owner, v)
			}
		}
	}
}

// Values the chart refuses, with a message that says what to do.
func TestBadValuesAreRefusedClearly(t *testing.T) {
	for set, want := range map[string]string{
		"replicas=10":                "replicas (10) is above maxReplicas (9)",
		"replicas=0":                 "replicas must be at least 1",
		"tls.mode=vault":             "tls.mode is self-signed, secret or cert-manager",
		"tls.mode=secret":            "tls.mode=secret needs tls.secretName",
		"restore.claimName=backups":  "restore.claimName needs restore.file",
		"podAntiAffinity=sometimes":  "podAntiAffinity is soft, hard or none",
		"metrics.monitor=Prometheus": "metrics.monitor is ServiceMonitor, PodMonitor or none",
	} {
		_, err := runHelm(t, "template", release, chartDir, "--namespace", namespace, "--set", set)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: %v, want an error saying %q", set, err, want)
		}
	}
}

// The strictness the tests rely on: a misspelt field, a field in the
// wrong case, a duplicated field and an unknown kind each fail to decode.
func TestStrictDecodingRefusesWhatTheAPIServerWould(t *testing.T) {
	r := render(t, configs[0])
	sts := rawOf[appsv1.StatefulSet](t, r, fullname)
	if _, err := decodeStrict(sts); err != nil {
		t.Fatalf("the StatefulSet as rendered: %v", err)
	}
	for name, broken := range map[string][]byte{
		"misspelt":        bytes.Replace(sts, []byte("podManagementPolicy:"), []byte("podManagmentPolicy:"), 1),
		"wrong case":      bytes.Replace(sts, []byte("readinessProbe:"), []byte("readinessprobe:"), 1),
		"duplicated":      bytes.Replace(sts, []byte("podManagementPolicy: Parallel"), []byte("podManagementPolicy: Parallel\n  podManagementPolicy: Parallel"), 1),
		"unknown kind":    bytes.Replace(sts, []byte("kind: StatefulSet"), []byte("kind: StatefulSets"), 1),
		"misspelt in CRD": []byte("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: x}\nspec: {secretName: x, dnsName: [a], issuerRef: {name: i}}\n"),
	} {
		if bytes.Equal(broken, sts) {
			t.Fatalf("%s: the replacement did not apply", name)
		}
		if _, err := decodeStrict(broken); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// NOTES.txt says where the cluster is, how to get the CA and root's
// token, and how to scale.
func TestNotesSayHowToReachTheClusterAndGetRootsToken(t *testing.T) {
	out, err := runHelm(t, "install", release, chartDir, "--namespace", namespace, "--dry-run=client")
	if err != nil {
		t.Fatal(err)
	}
	_, notes, ok := strings.Cut(out, "\nNOTES:\n")
	if !ok {
		t.Fatalf("no NOTES:\n%s", out)
	}
	for _, want := range []string{
		"https://hs-handlestore.store.svc:7401",
		"get secret hs-handlestore-tls -o jsonpath='{.data.ca\\.pem}'",
		"get secret hs-handlestore-root-token -o jsonpath='{.data.token}'",
		"--set replicas=N",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES do not say %q:\n%s", want, notes)
		}
	}
}
