// Package testkit runs what the Go client's tests need: real clusters of
// the built handlestore binary on free loopback ports, and the shared
// vectors of the contract.
package testkit

import (
	"os"
	"path/filepath"
	"runtime"
)

// Repo is the repository's root.
func Repo() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", ".."))
}

// VectorsPath is the shared request-state vectors file (proto/vectors/,
// the contract every client passes): the one place the tests name it.
func VectorsPath() string {
	return filepath.Join(Repo(), "proto", "vectors", "request_state_vectors.json")
}

// Bin is the handlestore binary: $HANDLESTORE_BIN, else a release build
// under $CARGO_TARGET_DIR, the repository's target/ or ~/.cache/handlestore.
func Bin() string {
	if b := os.Getenv("HANDLESTORE_BIN"); b != "" {
		return b
	}
	home, _ := os.UserHomeDir()
	var found []string
	for _, dir := range []string{os.Getenv("CARGO_TARGET_DIR"), filepath.Join(Repo(), "target"), filepath.Join(home, ".cache/handlestore/target")} {
		if dir != "" {
			found = append(found, filepath.Join(dir, "release", "handlestore"))
		}
	}
	for _, p := range found {
		if exists(p) {
			return p
		}
	}
	return found[len(found)-1]
}

// SkipReason says why the cluster tests cannot run here ("" if they can).
func SkipReason() string {
	if exists(Bin()) {
		return ""
	}
	return "no handlestore binary at " + Bin() + ": run `cargo build --release` or set HANDLESTORE_BIN"
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
