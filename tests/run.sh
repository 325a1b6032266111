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
# The Python-driven tests find the interpreter here (they skip, saying why,
# when there is none).
HANDLESTORE_TEST_PYTHON="$(./tests/ensure-python-env.sh)"
export HANDLESTORE_TEST_PYTHON
cargo build --release --workspace --bins --examples
cargo test --release --workspace "$@"
