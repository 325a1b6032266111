// Package testkit runs what the Go client's tests need: real clusters of
// the built handlestore binary on free loopback ports, and the shared
// vectors of the contract.
package testkit

import (
	"errors"
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

// Required says the test command built the binary just before the tests
// ($HANDLESTORE_REQUIRE_BIN=1, as tests/run.sh sets it): then a missing
// binary fails the cluster tests instead of skipping them.
func Required() bool { return os.Getenv("HANDLESTORE_REQUIRE_BIN") == "1" }

// Counted notes a cluster a test started, as a line "go" in the file
// $HANDLESTORE_CLUSTER_RUNS names (if any): tests/run.sh counts them, so a
// tier whose cluster tests all skipped cannot pass unseen.
func Counted() error {
	path := os.Getenv("HANDLESTORE_CLUSTER_RUNS")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString("go\n")
	return errors.Join(err, f.Close())
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
