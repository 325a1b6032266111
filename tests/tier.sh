#!/usr/bin/env bash
# Runs one tier of tests (tests/README.md), built exactly as ./tests/run.sh
# builds everything, so that switching between the two compiles nothing:
#
#   tests/tier.sh unit|api|cluster|security|mcp|docs|system|bench|python|ts|go|java|chart|kube [FILTER] [-- LIBTEST ARGS]
#   tests/tier.sh cluster transfer::          # one area of a tier
#   tests/tier.sh chart TestHelmLint          # chart and kube: FILTER is go test's -run
set -euo pipefail
cd "$(dirname "$0")/.."
tier="${1:?usage: tests/tier.sh unit|api|cluster|security|mcp|docs|system|bench|python|ts|go|java|chart|kube [FILTER]}"
shift
# The Helm chart (deploy/helm) needs Helm and Go, not the build.
case "$tier" in
  chart | kube) exec deploy/helm/test/ci.sh "$tier" "$@" ;;
esac
./tests/ensure-test-deps.sh
HANDLESTORE_TEST_PYTHON="$(./tests/ensure-python-env.sh)"
export HANDLESTORE_TEST_PYTHON
./deploy/build.sh
if [ "$tier" = system ]; then
  HANDLESTORE_OLD_BIN="$(./tests/old-build.sh)"
  export HANDLESTORE_OLD_BIN
fi
. tests/built.sh
run() { cargo test --release --workspace --features handlestore-tests/system "$@"; }
case "$tier" in
  unit) run --lib --test request_state --test namespace_move --test format_vectors --test error_details_vectors --test retry_vectors --test wire_constants "$@" ;;
  api | cluster | security | mcp | system) run --test "$tier" "$@" ;;
  docs) run --test doc_refs --test module_paths --test layering "$@" ;;
  bench) run --test harness --test seams --test raft_floor --test groups "$@" ;;
  python)
    if [ -z "$HANDLESTORE_TEST_PYTHON" ]; then
      echo "SKIPPED: the Python client's tests: no Python virtual environment" && exit 0
    fi
    PYTHONPATH="$PWD/client/python/src" "$HANDLESTORE_TEST_PYTHON" -m pytest -q -p no:cacheprovider client/python/tests "$@"
    ;;
  ts | go | java)
    "client/$tier/scripts/ci.sh" "$@"
    ;;
  *)
    echo "unknown tier: $tier (unit, api, cluster, security, mcp, docs, system, bench, python, ts, go, java, chart, kube)" >&2
    exit 2
    ;;
esac
