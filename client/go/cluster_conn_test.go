package handlestore_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"time"

	handlestore "github.com/handlestore/handlestore/client/go"
	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
	"github.com/handlestore/handlestore/client/go/internal/testkit"
)

// Generated stubs on Client.Conn against a cluster: they follow the leader
// as the typed API does, through a leadership transfer too.
func TestConnOnACluster(t *testing.T) {
	cluster := testkit.Start(t, testkit.Options{})
	c := cluster.Client(handlestore.Config{Namespace: "go-conn"})
	admin, state := pb.NewAdminClient(c.Conn()), pb.NewStateClient(c.Conn())

	t.Run("an admin call", func(t *testing.T) {
		leader := cluster.WaitLeader(10 * time.Second)
		s := got(admin.Status(testkit.Ctx(t), &pb.StatusRequest{}))(t)
		if s.GetLeaderId() != uint64(leader) || s.GetVersion() == "" {
			t.Fatalf("leader %d, status %v", leader, s)
		}
	})

	t.Run("a write, read back by the typed API", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		storeThroughConn(t, c, state, "conn/k", `"v"`)
		var v string
		if ok, err := c.StateTool(handlestore.StateToolOptions{}).Get(ctx, "conn/k", &v); !ok || err != nil || v != "v" {
			t.Fatalf("%q %v %v", v, ok, err)
		}
	})

	t.Run("the leader moves: calls follow it", func(t *testing.T) {
		ctx := testkit.Ctx(t)
		old := cluster.WaitLeader(10 * time.Second)
		storeThroughConn(t, c, state, "conn/before", "1")
		if c.Preferred() != cluster.Node(old).Addr {
			t.Fatalf("preferred %s, leader %s", c.Preferred(), cluster.Node(old).Addr)
		}
		to := old%len(cluster.Nodes) + 1
		moved := got(admin.TransferLeader(ctx, &pb.TransferLeaderRequest{To: uint64(to)}))(t)
		if moved.GetLeaderId() != uint64(to) || cluster.WaitLeader(10*time.Second) != to {
			t.Fatalf("transfer to %d: %v", to, moved)
		}
		storeThroughConn(t, c, state, "conn/after", "2")
		if c.Preferred() != cluster.Node(to).Addr {
			t.Fatalf("preferred %s, the new leader %s", c.Preferred(), cluster.Node(to).Addr)
		}
	})

	t.Run("a stream, past an unreachable endpoint", func(t *testing.T) {
		far := cluster.Client(handlestore.Config{Endpoints: append([]string{"127.0.0.1:1"}, cluster.Endpoints()...)})
		backup := got(pb.NewAdminClient(far.Conn()).SnapshotSave(testkit.Ctx(t), &pb.SnapshotSaveRequest{}))(t)
		first := got(backup.Recv())(t)
		file, sum := first.GetData(), first.GetSha256()
		for {
			chunk, err := backup.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			file, sum = append(file, got(chunk, err)(t).GetData()...), chunk.GetSha256()
		}
		want := sha256.Sum256(file)
		if first.GetTotalBytes() != uint64(len(file)) || !bytes.Equal(sum, want[:]) {
			t.Fatalf("%d bytes of %d, sha256 %x, want %x", len(file), first.GetTotalBytes(), sum, want)
		}
	})
}

// storeThroughConn stores json under key with the State stub, with a write
// id as Conn's writes need.
func storeThroughConn(t *testing.T, c *handlestore.Client, state pb.StateClient, key, json string) {
	t.Helper()
	id, release := c.NewWriteID()
	defer release()
	req := &pb.StoreRequest{Namespace: c.Namespace(), Key: key, Value: &pb.StateValue{Kind: &pb.StateValue_Json{Json: json}}, WriteId: id}
	got(state.Store(testkit.Ctx(t), req))(t)
}
