#!/usr/bin/env bash
# The chart's tier (tests/tier.sh chart; tests/run.sh runs it too): Helm 4
# built by deploy/install-helm.sh, then this module's checks (gofmt, go
# vet, go.mod and go.sum tidy) and its tests: helm lint and helm template
# of deploy/helm/handlestore in every configuration, every object decoded
# strictly into the Kubernetes API's Go types. Skipped, saying why, where
# Go is missing or too old to build Helm; a failure to build Helm or any
# failing test fails it.
#
#   deploy/helm/test/ci.sh                 # the chart tier
#   deploy/helm/test/ci.sh kube            # the opt-in real-cluster tier
#   deploy/helm/test/ci.sh chart TestLint  # a -run filter
set -euo pipefail
cd "$(dirname "$0")"
tier="${1:-chart}"
filter="${2:-}"
if ! command -v go >/dev/null 2>&1; then
  echo "SKIPPED: the $tier tier (deploy/helm): go is not installed"
  exit 0
fi
status=0
helm="$(../../install-helm.sh)" || status=$?
if [ "$status" -eq 3 ]; then
  echo "SKIPPED: the $tier tier (deploy/helm): Helm cannot be built here (see above)"
  exit 0
elif [ "$status" -ne 0 ]; then
  echo "deploy/install-helm.sh failed" >&2
  exit "$status"
fi
export HANDLESTORE_HELM="$helm" GOTOOLCHAIN=local GOFLAGS=-mod=readonly
if [ "$tier" = kube ]; then
  # -v: says why it skips, if it does.
  exec go test -count=1 -v -timeout 60m -run "${filter:-TestOnARealCluster}" .
fi
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
  echo "gofmt: these files are not formatted:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go mod tidy -diff
go vet ./...
"$helm" version --short
go test -count=1 -skip TestOnARealCluster ${filter:+-run "$filter"} .
