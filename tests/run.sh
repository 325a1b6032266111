#!/usr/bin/env bash
# The test command: installs build dependencies if missing, builds every
# binary the tests spawn (release profile, so RocksDB is compiled once for
# binaries and tests alike), then runs the whole test suite against real
# processes. Test-only tools (libfaketime) are installed when missing and
# possible; tests that cannot run without them say why they skip.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/ensure-build-deps.sh
./tests/ensure-test-deps.sh
cargo build --release --workspace --bins --examples
cargo test --release --workspace "$@"
