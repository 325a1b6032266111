#!/usr/bin/env bash
# The one build both README commands run (deploy/dev.sh and tests/run.sh):
# every binary and example of the workspace, release profile, with the test
# tiers' features, so whichever command runs second finds everything built
# and compiles nothing again. (The node binary it makes carries the crash
# tests' fault hooks, inert unless HANDLESTORE_FAILPOINTS is set; the
# image deploy/build-image.sh and deploy/Dockerfile build has none.)
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/ensure-build-deps.sh
cargo build --release --workspace --bins --examples --features handlestore-tests/system "$@"
