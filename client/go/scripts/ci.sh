#!/usr/bin/env bash
# The Go client's checks (client/go): gofmt, go vet, staticcheck (pinned in
# tools/go.mod), the generated code matches proto/ (drift check), then the
# tests, one package at a time (the cluster tests start real clusters of the
# handlestore binary: $HANDLESTORE_BIN, else target/release/handlestore
# under $CARGO_TARGET_DIR, the repository or ~/.cache/handlestore; without
# one they skip, saying why). Skipped, saying why, where go is missing or
# older than the go.mod needs.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1; then
  echo "SKIPPED: the Go client (client/go): go is not installed"
  exit 0
fi
# tools/go.mod (the generators, staticcheck) needs the newest Go of the two.
need="$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.mod tools/go.mod | sort -V | tail -1)"
have="$(go env GOVERSION | sed 's/^go//')"
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  echo "SKIPPED: the Go client (client/go): go $have is older than $need"
  exit 0
fi
export GOTOOLCHAIN=local
unformatted="$(gofmt -l . | grep -v '^gen/' || true)"
if [ -n "$unformatted" ]; then
  echo "gofmt: these files are not formatted:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
(cd tools && go build -o "$bin/" honnef.co/go/tools/cmd/staticcheck)
"$bin/staticcheck" ./...
scripts/gen.sh --check
# Says why the cluster tests skip, if they do (go test shows a passing
# package's output only with -v).
go test -count=1 -run '^$' -v . | grep '^SKIPPED' || true
go test -p 1 -count=1 ./...
