# Sourced by tests/run.sh and tests/tier.sh once deploy/build.sh has run:
# what each language's tier is told of the build. Every client tier runs
# from its own folder, so the binary is named by an absolute path; the
# build just made it, so a client tier that cannot find it fails instead
# of skipping (HANDLESTORE_REQUIRE_BIN); and with `count_clusters`, each
# test kit notes every cluster it starts in one file, which
# tests/clusters-ran.sh reads after the tier (more than none, or it fails).
target="${CARGO_TARGET_DIR:-target}"
case "$target" in
  /*) ;;
  *) target="$PWD/$target" ;;
esac
export HANDLESTORE_BIN="$target/release/handlestore"
export HANDLESTORE_REQUIRE_BIN=1
unset target

count_clusters() {
  HANDLESTORE_CLUSTER_RUNS="$(mktemp)"
  export HANDLESTORE_CLUSTER_RUNS
}
