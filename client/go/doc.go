// Package handlestore is the Go client of handlestore, a Raft-replicated
// store for the state that stateless MCP servers still need: opaque
// handles minted by one server replica and read by any other, state-tool
// keys, the key ring that seals MRTR request state, and MCP client state.
//
// Install it (once the repository is public) with
//
//	go get github.com/handlestore/handlestore/client/go
//
// It makes the promises of the Rust, Python and TypeScript clients: leader
// following and failover with backoff, bounded by the context's deadline;
// exactly-once retried writes (the same (client_id, seq) write ids);
// concurrent writes coalesced into Writes.Submit and point reads into
// Reads.Submit; errors that carry the node's reason from the error table.
//
// The package example is a store of carts: a client from the environment,
// a [HandleStore] minted into, updated by compare-and-set and read from
// any node. The others show the per-call options of writes ([IfRevision],
// [TTL], [Outcome]), errors ([Error]), and [Client.Conn], the cluster as a
// gRPC connection for the generated stubs of the calls the typed API
// lacks (admin and auth calls). The examples are compiled with the tests
// and run against a test cluster.
//
// Also: [StateTool] (Store, Retrieve, Delete, DeletePrefix, List and Scan,
// Exists, atomic BatchStore and BatchRetrieve), [Client.Watch] (resumed on
// another node from its last revision), the key ring ([Client.Keyring],
// KeyringRotate, KeyringRetire), [RequestStateCodec] and
// [ClientStateStore].
// The generated wire types are in gen/handlestore/v1.
package handlestore
