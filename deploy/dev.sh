#!/usr/bin/env bash
# Quickstart: build handlestore (installing libclang and a C++ compiler if
# missing) and run a three-node cluster on this machine:
#   ./deploy/dev.sh [--data DIR] [--base-port 7401]
# Ctrl-C stops it; running it again resumes from the same data.
set -euo pipefail
cd "$(dirname "$0")/.."
# The same build as the test command's (deploy/build.sh): running one
# after the other compiles nothing twice.
./deploy/build.sh
target="${CARGO_TARGET_DIR:-target}"
exec "$target/release/handlestore" dev "$@"
