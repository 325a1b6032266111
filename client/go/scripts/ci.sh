#!/usr/bin/env bash
# The Go client's checks (client/go): gofmt, go vet, staticcheck (pinned in
# tools/go.mod), the generated code matches proto/ (drift check), then the
# tests under the race detector, one package at a time (the cluster tests start real clusters of the
# handlestore binary: $HANDLESTORE_BIN, else target/release/handlestore
# under $CARGO_TARGET_DIR, the repository or ~/.cache/handlestore; without
# one they skip, saying why, or fail where HANDLESTORE_REQUIRE_BIN=1, as the
# test command runs them; there it also fails if they started no cluster). Then the same in each nested module (the MCP
# SDK seams: internal/mcpevents, gosdk, mcpgo), with their go.mod and
# go.sum checked tidy. Skipped, saying why, where go is missing or older
# than the go.mod files need.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1; then
  echo "SKIPPED: the Go client (client/go): go is not installed"
  exit 0
fi
# The nested modules, each requiring this one through a replace directive.
nested=(internal/mcpevents gosdk mcpgo bench)
# tools/go.mod (the generators, staticcheck) needs the newest Go of them.
need="$(for m in . tools "${nested[@]}"; do sed -n 's/^go \([0-9.]*\)$/\1/p' "$m/go.mod"; done | sort -V | tail -1)"
have="$(go env GOVERSION | sed 's/^go//')"
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  echo "SKIPPED: the Go client (client/go): go $have is older than $need"
  exit 0
fi
export GOTOOLCHAIN=local
# gofmt walks the nested modules' directories too.
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
# The race detector needs cgo; without a C compiler the tests run without it.
race=()
if [ "$(go env CGO_ENABLED)" = 1 ] && command -v "$(go env CC)" >/dev/null 2>&1; then
  race=(-race)
else
  echo "SKIPPED: the race detector (client/go): cgo or a C compiler is missing; the tests run without it"
fi
go test "${race[@]}" -p 1 -count=1 ./...
for m in "${nested[@]}"; do
  echo "client/go/$m"
  (
    cd "$m"
    # go.mod and go.sum as committed are what go mod tidy makes.
    go mod tidy -diff
    go vet ./...
    "$bin/staticcheck" ./...
    go test "${race[@]}" -p 1 -count=1 ./...
  )
done
../../tests/clusters-ran.sh go
