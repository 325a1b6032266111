#!/usr/bin/env bash
# Builds the node of an earlier release once per machine and prints the
# path of its binary, for the rolling-upgrade test (tests/tests/system/
# upgrade.rs). The build is kept outside the clone, by release name, as the
# target directory is: building an older commit compiles RocksDB again (its
# lock file differs), about 20 minutes on two cores, so it is done once.
#
#   tests/old-build.sh            # v0.1.0
#
# Prints nothing (and says why on stderr) where the commit is not in this
# clone's history (a shallow clone).
set -euo pipefail
cd "$(dirname "$0")/.."
name="v0.1.0"
commit="7e31e662153946231f1ed3ce33b453988135da0e"
cache="${HANDLESTORE_BUILDS:-$HOME/.cache/handlestore/builds}"
bin="$cache/$name/handlestore"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "old-build: commit $commit ($name) is not in this clone (shallow?); cannot build $name" >&2
  exit 0
fi
git tag "$name" "$commit" 2>/dev/null || true
src="$cache/src-$name"
rm -rf "$src"
mkdir -p "$cache"
git archive --format=tar "$commit" | (mkdir -p "$src" && tar -x -C "$src")
echo "old-build: building $name ($commit) in $src; about 20 minutes on two cores, once per machine" >&2
(
  cd "$src"
  HANDLESTORE_COMMIT="${commit:0:12}" CARGO_TARGET_DIR="$cache/target-$name" \
    cargo build --release -p handlestore-node --bin handlestore >&2
)
mkdir -p "$cache/$name"
cp "$cache/target-$name/release/handlestore" "$bin.tmp"
mv "$bin.tmp" "$bin"
rm -rf "$src" "$cache/target-$name"
echo "$bin"
