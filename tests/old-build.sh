#!/usr/bin/env bash
# Builds the node of an earlier release once per machine and prints the
# path of its binary, for the rolling-upgrade test (tests/tests/system/
# upgrade.rs). The binary is kept outside the clone, by release name, so it
# is built once per machine. It is built in the shared target directory
# (CARGO_TARGET_DIR, as .ci/run sets it): v0.1.0 locks the same RocksDB,
# bindgen and cc as today, so their compiled C++ is reused rather than
# built a second time (about 20 minutes on two cores). A binary of today
# already in that directory's release/ is put back afterwards; tests/run.sh
# runs this before deploy/build.sh anyway.
#
# Cargo names a workspace crate's build by its path inside the workspace,
# not by the clone it is in, and takes a build for fresh when it is newer
# than the sources: so the old release's crates (handlestore-*) and
# today's share names, and whichever was built last would pass for the
# other. Their fingerprints are removed before and after the old build,
# so that each release's own crates are compiled from its own sources
# (the dependencies from crates.io are shared: same name, same version,
# same code).
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
target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
today="$target/release/handlestore"
kept=""
if [ -e "$today" ]; then
  kept="$cache/handlestore-of-today.tmp"
  cp -p "$today" "$kept"
fi
./deploy/ensure-build-deps.sh >&2
echo "old-build: building $name ($commit) in $src, into $target; once per machine" >&2
forget_workspace_builds() {
  rm -rf "$target"/release/.fingerprint/handlestore-*
}
forget_workspace_builds
(
  cd "$src"
  HANDLESTORE_COMMIT="${commit:0:12}" CARGO_TARGET_DIR="$target" \
    cargo build --release -p handlestore-node --bin handlestore >&2
)
forget_workspace_builds
mkdir -p "$cache/$name"
cp "$today" "$bin.tmp"
mv "$bin.tmp" "$bin"
if [ -n "$kept" ]; then
  mv "$kept" "$today"
else
  rm -f "$today"
fi
rm -rf "$src"
echo "$bin"
