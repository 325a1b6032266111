#!/usr/bin/env bash
# The test command: installs build dependencies if missing, builds every
# binary the tests spawn (release profile, so RocksDB is compiled once for
# binaries and tests alike), then runs the whole test suite against real
# processes. Test-only tools (libfaketime) are installed when missing and
# possible; tests that cannot run without them say why they skip.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/timed.sh
timed "test dependencies" ./tests/ensure-test-deps.sh
# The Python tests and the Rust tests driven by the Python MCP SDK find the
# interpreter here (they skip, saying why, when there is none).
HANDLESTORE_TEST_PYTHON="$(./tests/ensure-python-env.sh)"
export HANDLESTORE_TEST_PYTHON
# The previous release's node, for the rolling-upgrade test: built once per
# machine and kept outside the clone. First, so that its build compiles
# RocksDB's C++ once for both releases.
HANDLESTORE_OLD_BIN="$(./tests/old-build.sh)"
export HANDLESTORE_OLD_BIN
# Every binary the tests spawn, built exactly as deploy/dev.sh builds them.
timed "the build" ./deploy/build.sh
# Every tier (tests/README.md): unit tests, api, cluster, security, mcp,
# system (chaos and Docker), the benchmark harness's own tests.
timed "the Rust tiers" cargo test --release --workspace --features handlestore-tests/system "$@"
# The clients' tiers get the binary just built by its absolute path, fail
# (never skip) without it, and count the clusters their tests start.
. tests/built.sh
count_clusters
# The Python client (client/python): its stubs match proto/, and its tests
# pass against real clusters of the binary just built.
if [ -n "$HANDLESTORE_TEST_PYTHON" ]; then
  "$HANDLESTORE_TEST_PYTHON" client/python/scripts/gen_proto.py --check
  PYTHONPATH="$PWD/client/python/src" timed python "$HANDLESTORE_TEST_PYTHON" -m pytest -q -p no:cacheprovider client/python/tests
  tests/clusters-ran.sh python
else
  echo "SKIPPED: the Python client's tests: no Python virtual environment (see the note above)"
fi
# The TypeScript (client/ts), Go (client/go) and Java (client/java)
# clients: install from their lockfiles (Java: pinned versions), check that
# their generated code matches proto/ (Java generates it at build time),
# their format, lint and types, then run their tests against real clusters
# of the binary just built (each skips, saying why, without Node 20 and
# npm, Go, or Java 17 and Maven; where they run, each counts the clusters
# its tests started: more than none).
timed ts client/ts/scripts/ci.sh
timed go client/go/scripts/ci.sh
timed java client/java/scripts/ci.sh
# The Helm chart (deploy/helm/handlestore): Helm 4 built from its pinned
# module, lint and render in every configuration, every object decoded
# strictly into the Kubernetes API's Go types (skipped, saying why,
# without Go). The real-cluster tier is opt-in: it says why it skips.
timed chart deploy/helm/test/ci.sh chart
timed kube deploy/helm/test/ci.sh kube
