#!/usr/bin/env bash
# Quickstart: build handlestore (installing libclang and a C++ compiler if
# missing) and run a three-node cluster on this machine:
#   ./deploy/dev.sh [--data DIR] [--base-port 7401]
# Ctrl-C stops it; running it again resumes from the same data.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/ensure-build-deps.sh
cargo build --release -p handlestore-node --bin handlestore
target="${CARGO_TARGET_DIR:-target}"
exec "$target/release/handlestore" dev "$@"
