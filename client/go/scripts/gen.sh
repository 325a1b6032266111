#!/usr/bin/env bash
# Regenerates the Go client's generated code from proto/: gen/ (buf with
# protoc-gen-go and protoc-gen-go-grpc, the versions pinned in tools/go.mod)
# reasons_gen.go and wire_gen.go (internal/cmd/genreasons, from
# proto/reasons.txt and proto/wire.txt).
#   scripts/gen.sh           write them
#   scripts/gen.sh --check   fail if the committed files differ (drift)
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
[ "${1:-}" = "--check" ] && check=true
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The generators, built from tools/go.mod's pins (cached by go build).
(cd tools && go build -o "$work/bin/" github.com/bufbuild/buf/cmd/buf \
  google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc)
PATH="$work/bin:$PATH" buf generate ../../proto --path ../../proto/handlestore/v1 \
  --template buf.gen.yaml --output "$work/out"
go run ./internal/cmd/genreasons ../../proto/reasons.txt >"$work/out/reasons_gen.go"
go run ./internal/cmd/genreasons -wire ../../proto/wire.txt >"$work/out/wire_gen.go"
if $check; then
  status=0
  diff -r gen "$work/out/gen" || status=1
  for f in reasons_gen.go wire_gen.go; do
    diff "$f" "$work/out/$f" || status=1
  done
  if [ "$status" -ne 0 ]; then
    echo "client/go: generated code differs from proto/: run client/go/scripts/gen.sh" >&2
    exit 1
  fi
  echo "client/go: generated code matches proto/"
  exit 0
fi
rm -rf gen
cp -r "$work/out/gen" gen
cp "$work/out/reasons_gen.go" "$work/out/wire_gen.go" .
echo "client/go: regenerated gen/, reasons_gen.go and wire_gen.go"
