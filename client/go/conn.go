package handlestore

import (
	"context"

	"google.golang.org/grpc"
)

// Conn is the cluster as a gRPC connection, for the generated stubs of
// gen/handlestore/v1 and the calls the typed API does not cover (admin
// and auth calls):
//
//	status, err := pb.NewAdminClient(client.Conn()).Status(ctx, &pb.StatusRequest{})
//
// Its calls are the typed API's: on the leader once known, moved to the
// leader a refusal names or to the next node, retried with backoff, with
// the client's credentials, bounded by the context's deadline (else
// Config.CallTimeout), each attempt by Config.AttemptTimeout; their errors
// are *Error, *DeadlineError or the context's. A write request must carry
// a write id from NewWriteID: a retry resends it as it is, so the node
// applies it once.
//
// A stream is opened the same way: until its first answer, a refusal opens
// it again elsewhere and sends again what was sent on it (the wait for the
// first answer is bounded by the call's deadline, not AttemptTimeout: a
// snapshot may take long to start). Once it has answered it is the node's,
// under the context alone; resuming it elsewhere is the caller's (Watch
// does it for watches).
func (c *Client) Conn() grpc.ClientConnInterface { return clusterConn{c.core} }

// clusterConn is what Conn gives.
type clusterConn struct{ k *core }

func (cc clusterConn) Invoke(ctx context.Context, method string, req, resp any, opts ...grpc.CallOption) error {
	return cc.k.invoke(ctx, method, req, resp, nil, opts...)
}

func (cc clusterConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return cc.k.openStream(ctx, desc, method, opts)
}
