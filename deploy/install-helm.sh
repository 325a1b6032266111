#!/usr/bin/env bash
# Helm 4 for the chart (deploy/helm/handlestore) and its tests: builds
# helm.sh/helm/v4/cmd/helm at the version deploy/helm/tool/go.mod pins
# (its go.sum is committed) from the Go module proxy, into a cache outside
# the clone, checks the version the binary prints, and prints its path. A
# no-op once built.
#
#   helm="$(deploy/install-helm.sh)" && "$helm" version
#
# Exit 3, saying why on stderr, where Go is missing or older than the
# go.mod needs (callers skip then); any other failure is an error.
set -euo pipefail
cd "$(dirname "$0")/helm/tool"
version="$(sed -n 's/^[[:space:]]*\(require \)\{0,1\}helm\.sh\/helm\/v4 \(v[0-9.]*\)\( \/\/ indirect\)\{0,1\}$/\2/p' go.mod)"
[ -n "$version" ] || { echo "deploy/install-helm.sh: no helm.sh/helm/v4 version in go.mod" >&2; exit 1; }
dir="${HANDLESTORE_CACHE:-$HOME/.cache/handlestore}/bin"
bin="$dir/helm-$version"

built_version() { "$1" version --template '{{.Version}}' 2>/dev/null || true; }

if [ -x "$bin" ] && [ "$(built_version "$bin")" = "$version" ]; then
  echo "$bin"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "go is not installed (Helm $version is built from source)" >&2
  exit 3
fi
need="$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.mod)"
have="$(go env GOVERSION | sed 's/^go//')"
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  echo "go $have is older than $need, which Helm $version needs" >&2
  exit 3
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
mkdir -p "$dir"
# One build at a time (two tiers may get here at once); then look again.
exec 9>"$dir/.helm.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if [ -x "$bin" ] && [ "$(built_version "$bin")" = "$version" ]; then
  echo "$bin"
  exit 0
fi
echo "building Helm $version (once; kept in $dir)" >&2
# What Helm's own Makefile stamps into a release build: its version, and
# the Kubernetes version of its client libraries (for .Capabilities).
k8s="$(go list -m -f '{{.Version}}' k8s.io/client-go | sed 's/^v//')"
major=$(( ${k8s%%.*} + 1 ))
minor="$(echo "$k8s" | cut -d. -f2)"
pkg=helm.sh/helm/v4
ldflags="-s -w -X $pkg/internal/version.version=$version -X $pkg/internal/version.metadata="
for p in pkg/chart/v2/lint/rules pkg/internal/v3/lint/rules pkg/chart/common/util; do
  ldflags="$ldflags -X $pkg/$p.k8sVersionMajor=$major -X $pkg/$p.k8sVersionMinor=$minor"
done
ldflags="$ldflags -X $pkg/internal/version.kubeClientVersionMajor=$major -X $pkg/internal/version.kubeClientVersionMinor=$minor"
tmp="$bin.tmp.$$"
trap 'rm -f "$tmp"' EXIT
go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg/cmd/helm"
got="$(built_version "$tmp")"
if [ "$got" != "$version" ]; then
  echo "deploy/install-helm.sh: the Helm just built says it is ${got:-nothing}, not $version" >&2
  exit 1
fi
mv "$tmp" "$bin"
echo "$bin"
