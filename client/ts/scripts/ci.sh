#!/usr/bin/env bash
# The TypeScript client's checks (client/ts): install from the lockfile,
# the generated code matches proto/ (drift check), types, lint, then the
# tests (the cluster tests run real clusters of the handlestore binary:
# $HANDLESTORE_BIN, else target/release/handlestore under $CARGO_TARGET_DIR,
# the repository, or ~/.cache/handlestore; they skip, saying why, without
# one, and fail instead where HANDLESTORE_REQUIRE_BIN=1, as the test
# command runs them; there it also fails if they started no cluster).
# Skipped, saying why, where node or npm is missing or too old.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "SKIPPED: the TypeScript client (client/ts): node and npm are not installed"
  exit 0
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "SKIPPED: the TypeScript client (client/ts): node $(node --version) is older than 20"
  exit 0
fi
npm ci --no-audit --no-fund
npm run gen:check
npm run typecheck
npm run lint
npm test
../../tests/clusters-ran.sh ts
