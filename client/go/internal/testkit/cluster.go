package testkit

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	handlestore "github.com/handlestore/handlestore/client/go"
	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// Node is one member: its client address, peer address (with TLS), data
// directory, log, and process while it runs.
type Node struct {
	ID       int
	Addr     string
	PeerAddr string
	Data     string
	Log      string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// Options shape a cluster.
type Options struct {
	// Size is the number of nodes (default 3).
	Size int
	// TLS gives the nodes certificates from `handlestore certs`.
	TLS bool
	// ClientCerts (implies TLS) makes client certificates for root and
	// these names (`handlestore certs --client NAME`: the common name is
	// the user), and nodes that require one (`--tls-client-ca`); the
	// cluster's clients then present root's (TLS, Client), others TLSFor's.
	ClientCerts []string
	// Extra flags for every node.
	Extra []string
}

// Cluster is a running cluster of the built binary, stopped (and its
// files removed) when the test ends. Start one at a time.
type Cluster struct {
	Bin   string
	Root  string
	Certs string
	Nodes []*Node
	extra []string
	// clientCerts: the names of ClientCerts; nodes require a certificate.
	clientCerts []string
	t           testing.TB
}

var (
	portsMu sync.Mutex
	used    = map[int]bool{}
)

// freePort is a free loopback port, never the same one twice in a run.
func freePort(t testing.TB) int {
	portsMu.Lock()
	defer portsMu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !used[port] {
			used[port] = true
			return port
		}
	}
}

// Start starts a cluster and waits for its leader; it skips the test,
// saying why, when there is no binary (fails it, where one is Required).
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if why := SkipReason(); why != "" {
		if Required() {
			t.Fatal("the cluster tests: " + why + " (HANDLESTORE_REQUIRE_BIN=1: the test command built it)")
		}
		t.Skip("SKIPPED: the cluster tests: " + why)
	}
	if err := Counted(); err != nil {
		t.Fatal(err)
	}
	if opts.Size == 0 {
		opts.Size = 3
	}
	if len(opts.ClientCerts) > 0 {
		opts.TLS = true
	}
	c := &Cluster{Bin: Bin(), Root: t.TempDir(), extra: opts.Extra, clientCerts: opts.ClientCerts, t: t}
	for id := 1; id <= opts.Size; id++ {
		n := &Node{ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), Data: filepath.Join(c.Root, fmt.Sprintf("node-%d", id))}
		n.Log = n.Data + ".log"
		if opts.TLS {
			n.PeerAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		}
		c.Nodes = append(c.Nodes, n)
	}
	if opts.TLS {
		c.makeCerts()
	}
	t.Cleanup(c.Stop)
	for _, n := range c.Nodes {
		c.Spawn(n.ID)
	}
	c.WaitLeader(30 * time.Second)
	return c
}

func (c *Cluster) makeCerts() {
	c.Certs = filepath.Join(c.Root, "certs")
	args := []string{"certs", "--dir", c.Certs, "--client", "root"}
	for _, name := range c.clientCerts {
		args = append(args, "--client", name)
	}
	for _, n := range c.Nodes {
		args = append(args, "--node", fmt.Sprintf("%d=localhost,127.0.0.1", n.ID))
	}
	if out, err := exec.Command(c.Bin, args...).CombinedOutput(); err != nil {
		c.t.Fatalf("handlestore certs: %v\n%s", err, out)
	}
}

// Node is the member with this id.
func (c *Cluster) Node(id int) *Node { return c.Nodes[id-1] }

// Endpoints are the members' client addresses.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// TLS is the client TLS of a cluster with TLS (nil without): the CA, and
// where nodes require client certificates, root's.
func (c *Cluster) TLS() *handlestore.TLS {
	if len(c.clientCerts) > 0 {
		return c.TLSFor("root")
	}
	return c.TLSFor("")
}

// TLSFor is the CA and the client certificate made for name (root or one
// of Options.ClientCerts; "": none), nil without TLS.
func (c *Cluster) TLSFor(name string) *handlestore.TLS {
	if c.Certs == "" {
		return nil
	}
	var cert, key string
	if name != "" {
		cert = filepath.Join(c.Certs, "client-"+name+".pem")
		key = filepath.Join(c.Certs, "client-"+name+"-key.pem")
	}
	t, err := handlestore.TLSFromFiles(filepath.Join(c.Certs, "ca.pem"), cert, key)
	if err != nil {
		c.t.Fatal(err)
	}
	return t
}

// Client is a client of this cluster (with its TLS), closed at the end.
func (c *Cluster) Client(cfg handlestore.Config) *handlestore.Client {
	if cfg.Endpoints == nil {
		cfg.Endpoints = c.Endpoints()
	}
	if cfg.TLS == nil {
		cfg.TLS = c.TLS()
	}
	client, err := handlestore.New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = client.Close() })
	return client
}

func (c *Cluster) nodeArgs(n *Node) []string {
	var initial []string
	for _, m := range c.Nodes {
		member := fmt.Sprintf("%d=%s", m.ID, m.Addr)
		if m.PeerAddr != "" {
			member += "/" + m.PeerAddr
		}
		initial = append(initial, member)
	}
	args := []string{"node", "--id", strconv.Itoa(n.ID), "--listen", n.Addr, "--data", n.Data,
		"--initial-cluster", strings.Join(initial, ","), "--heartbeat", "100ms", "--election-timeout", "700ms",
		"--sweep-interval", "100ms"}
	if c.Certs != "" {
		cert := filepath.Join(c.Certs, fmt.Sprintf("node-%d.pem", n.ID))
		key := filepath.Join(c.Certs, fmt.Sprintf("node-%d-key.pem", n.ID))
		args = append(args, "--tls-cert", cert, "--tls-key", key, "--peer-tls-cert", cert, "--peer-tls-key", key,
			"--peer-tls-ca", filepath.Join(c.Certs, "ca.pem"), "--peer-listen", n.PeerAddr)
		if len(c.clientCerts) > 0 {
			args = append(args, "--tls-client-ca", filepath.Join(c.Certs, "ca.pem"))
		}
	}
	return append(args, c.extra...)
}

// Spawn starts node id (again).
func (c *Cluster) Spawn(id int) {
	n := c.Node(id)
	if err := os.MkdirAll(n.Data, 0o755); err != nil {
		c.t.Fatal(err)
	}
	log, err := os.OpenFile(n.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.Bin, c.nodeArgs(n)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting node %d: %v", id, err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		_ = log.Close()
		close(done)
	}(n.exited)
}

// Kill SIGKILLs node id: no goodbye, as a crash.
func (c *Cluster) Kill(id int) {
	c.signal(c.Node(id), syscall.SIGKILL, 0)
}

// signal sends sig to a running node and waits for it to exit; after
// grace (if any) it is killed.
func (c *Cluster) signal(n *Node, sig syscall.Signal, grace time.Duration) {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(sig)
	if grace > 0 {
		select {
		case <-n.exited:
		case <-time.After(grace):
			_ = n.cmd.Process.Kill()
		}
	}
	<-n.exited
	n.cmd = nil
}

// Stop ends every node (SIGTERM, then SIGKILL after 10 s).
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.signal(n, syscall.SIGTERM, 10*time.Second)
		}()
	}
	wg.Wait()
}

// Running reports whether node id runs.
func (c *Cluster) Running(id int) bool { return c.Node(id).cmd != nil }

// Logs are the last lines of every node's log.
func (c *Cluster) Logs(lines int) string {
	var b strings.Builder
	for _, n := range c.Nodes {
		raw, _ := os.ReadFile(n.Log)
		all := strings.Split(string(raw), "\n")
		fmt.Fprintf(&b, "---- node %d ----\n%s\n", n.ID, strings.Join(all[max(0, len(all)-lines):], "\n"))
	}
	return b.String()
}

// Status is node id's status, asked of it alone.
func (c *Cluster) Status(id int) (*pb.StatusResponse, error) {
	creds := insecure.NewCredentials()
	if t := c.TLS(); t != nil {
		cfg, err := handlestoreTLS(t)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(cfg)
	}
	cc, err := grpc.NewClient("passthrough:///"+c.Node(id).Addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return pb.NewAdminClient(cc).Status(ctx, &pb.StatusRequest{})
}

// WaitLeader is the leader's id, once every running node agrees on it.
func (c *Cluster) WaitLeader(timeout time.Duration) int {
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		if leader := c.agreedLeader(); leader > 0 {
			return leader
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("no leader within %v\n%s", timeout, c.Logs(40))
	return 0
}

func (c *Cluster) agreedLeader() int {
	leader := uint64(0)
	for _, n := range c.Nodes {
		if n.cmd == nil {
			continue
		}
		s, err := c.Status(n.ID)
		if err != nil || s.GetLeaderId() == 0 || (leader != 0 && s.GetLeaderId() != leader) {
			return 0
		}
		leader = s.GetLeaderId()
	}
	if leader == 0 {
		return 0
	}
	if s, err := c.Status(int(leader)); err != nil || s.GetState() != "leader" {
		return 0
	}
	return int(leader)
}
