#!/usr/bin/env bash
# tests/clusters-ran.sh LANG: after a client tier's tests, how many real
# clusters its test kit started ($HANDLESTORE_CLUSTER_RUNS, one line per
# cluster, tests/built.sh), and a failure if none did: a tier whose
# cluster tests all skipped must not pass unseen. Says nothing and passes
# where nothing is counted (a tier run alone, with a filter).
set -euo pipefail
lang="${1:?usage: tests/clusters-ran.sh ts|go|python|java}"
runs="${HANDLESTORE_CLUSTER_RUNS:-}"
[ -n "$runs" ] || exit 0
n="$(grep -cx "$lang" "$runs" 2>/dev/null || true)"
echo "$lang: ${n:-0} clusters started by the tests"
if [ "${n:-0}" -eq 0 ]; then
  echo "the $lang cluster tests started no cluster: they all skipped or none ran" >&2
  exit 1
fi
