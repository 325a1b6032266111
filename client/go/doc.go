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
//	cfg, err := handlestore.FromEnv() // HANDLESTORE_ENDPOINTS, _NAMESPACE, _CACERT, _CERT, _KEY, _TOKEN, _TOKEN_FILE
//	client, err := handlestore.New(cfg)
//	defer client.Close()
//
//	type Cart struct{ Items []string `json:"items"` }
//	carts, err := handlestore.NewHandleStore[Cart](client, "cart",
//		handlestore.HandleStoreOptions{Prefix: "cart", DefaultTTL: time.Hour})
//	id, err := carts.Mint(ctx, Cart{}, handlestore.TTLDefault) // > 0 that TTL, 0 the default, < 0 never
//	_, _, err = carts.Update(ctx, id, func(c Cart) (Cart, error) { // compare-and-set loop
//		c.Items = append(c.Items, "sku-1")
//		return c, nil
//	})
//	cart, ok, err := carts.Get(ctx, id) // from any node
//
//	if errors.Is(err, handlestore.ErrNotFound) { ... }
//	var e *handlestore.Error
//	if errors.As(err, &e) { log.Println(e.Reason, e.Code, e.Message) }
//
// Also: StateTool (Store, Retrieve, Delete, DeletePrefix, List and Scan,
// Exists, atomic BatchStore and BatchRetrieve), Watch (resumed on another
// node from its last revision), the key ring (Client.Keyring,
// KeyringRotate, KeyringRetire), RequestStateCodec and ClientStateStore.
// The generated wire types are in gen/handlestore/v1.
package handlestore
