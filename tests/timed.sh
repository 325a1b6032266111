# Sourced by .ci/run and tests/run.sh: `timed LABEL COMMAND...` runs the
# command and prints how long it took ("== LABEL: N s"), so a CI log says
# where its time went (tests/README.md's tier times are read from it).
timed() {
  local label=$1 start=$SECONDS
  shift
  "$@"
  echo "== $label: $((SECONDS - start)) s"
}
