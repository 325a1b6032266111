package handlestore

import (
	"context"
	"time"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// The cluster's replicated key ring (per namespace): list, create, rotate,
// retire. Secrets are drawn by the leader from its CSPRNG inside a
// replicated command, so every node holds the same ring.

// RingKey is one key of the ring.
type RingKey struct {
	ID string
	// Primary seals new request state; every key opens.
	Primary bool
	Created time.Time
	// Secret is empty unless asked for.
	Secret []byte
}

func ringKeys(resp *pb.KeyringResponse) []RingKey {
	out := make([]RingKey, len(resp.GetKeys()))
	for i, k := range resp.GetKeys() {
		out[i] = RingKey{ID: k.GetId(), Primary: k.GetState() == "primary", Created: time.UnixMilli(int64(k.GetCreatedMs())), Secret: k.GetSecret()}
	}
	return out
}

// Keyring is the key ring of the client's namespace, oldest first
// (secrets only when asked for).
func (c *Client) Keyring(ctx context.Context, includeSecrets bool) ([]RingKey, error) {
	req := &pb.KeyringListRequest{Namespace: c.namespace, IncludeSecrets: includeSecrets, Read: Linearizable.wire()}
	resp := &pb.KeyringResponse{}
	if err := c.core.invoke(ctx, pb.Admin_KeyringList_FullMethodName, req, resp, nil); err != nil {
		return nil, err
	}
	return ringKeys(resp), nil
}

// KeyringRotate creates the ring with its first key (create; ErrAlreadyExists
// if there is one), or rotates it: a new primary, the old one kept for
// opening. It gives the new key's id.
func (c *Client) KeyringRotate(ctx context.Context, create bool) (string, error) {
	id, release := c.NewWriteID()
	defer release()
	resp := &pb.KeyringResponse{}
	req := &pb.KeyringRotateRequest{Namespace: c.namespace, Create: create, WriteId: id}
	if err := c.core.invoke(ctx, pb.Admin_KeyringRotate_FullMethodName, req, resp, nil); err != nil {
		return "", err
	}
	return resp.GetKeyId(), nil
}

// KeyringRetire retires a non-primary key: what it sealed no longer opens.
func (c *Client) KeyringRetire(ctx context.Context, keyID string) error {
	id, release := c.NewWriteID()
	defer release()
	req := &pb.KeyringRetireRequest{Namespace: c.namespace, KeyId: keyID, WriteId: id}
	return c.core.invoke(ctx, pb.Admin_KeyringRetire_FullMethodName, req, &pb.KeyringResponse{}, nil)
}

// NewWriteID issues a write id of this client's exactly-once sequence, for
// a write sent with Invoke; every retry of that write must reuse it. Call
// release once the write is answered (or given up).
func (c *Client) NewWriteID() (id *pb.WriteId, release func()) {
	t := c.ids.take()
	return t.id, t.release
}
