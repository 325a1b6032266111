package handlestore

import (
	"os"
	"regexp"
	"testing"
)

// requireOf is the version go.mod text requires of a module.
func requireOf(t *testing.T, path, module string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + ` (v\S+)`).FindSubmatch(raw)
	if m == nil {
		t.Fatalf("%s requires no %s", path, module)
	}
	return string(m[1])
}

// The generators of tools/go.mod are the versions of the runtime the
// module requires: generated code and runtime agree.
func TestTheGeneratorsMatchTheRuntime(t *testing.T) {
	const protobuf = "google.golang.org/protobuf"
	if a, b := requireOf(t, "go.mod", protobuf), requireOf(t, "tools/go.mod", protobuf); a != b {
		t.Fatalf("go.mod requires %s %s, tools/go.mod %s", protobuf, a, b)
	}
	gen, err := os.ReadFile("gen/handlestore/v1/common.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := "protoc-gen-go " + requireOf(t, "go.mod", protobuf); !regexp.MustCompile(regexp.QuoteMeta(want) + `\n`).Match(gen) {
		t.Fatalf("gen/ was not made by %s: run scripts/gen.sh", want)
	}
}
