// Package mcpkit holds models of mcpkit (github.com/panyam/mcpkit,
// v0.5.2, commit a953a7bcb06ceda7a7c96ee09b52b2d4b1d1c89e) that
// hsmcpkit's tests hold the drop-in to: its HandleStore[T] interface (the
// method set only), an in-memory store that answers as mcpkit's does
// (model.go), and what its dispatcher tells a tools/call's client when a
// handler fails (dispatch.go).
//
// The Go module proxy refuses github.com/panyam/mcpkit (and its
// dependency github.com/panyam/servicekit), so no go.mod can require it.
// These models are our code, written from mcpkit's documented and
// observed behaviour for the comparison; none of it is mcpkit's source.
// Only tests import the package.
package mcpkit
