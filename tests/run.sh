#!/usr/bin/env bash
# The test command: installs build dependencies if missing, builds every
# binary the tests spawn (release profile, so RocksDB is compiled once for
# binaries and tests alike), then runs the whole test suite against real
# processes.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/ensure-build-deps.sh
cargo build --release --workspace --bins --examples
cargo test --release --workspace "$@"
