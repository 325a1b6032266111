#!/usr/bin/env bash
# Profiles one benchmark cell: runs the harness on one system, one operation
# and one concurrency under `perf record -a` (every process on the machine,
# with call stacks), and writes a flamegraph of it.
#
#   tests/profile.sh [--ops mint] [--concurrency 64] [--systems handlestore]
#                    [--duration 10s] [--out target/profile] [--freq 499]
#
# Writes <out>/perf.data, <out>/folded.txt (one line per stack, for
# grep or inferno-diff-folded), <out>/flamegraph.svg, and the bench's own
# results.json for the cell. Installs what it needs when missing: perf
# (Debian's linux-perf) and inferno (cargo install inferno). perf needs root,
# or kernel.perf_event_paranoid <= 0 for a whole-machine recording.
set -euo pipefail
cd "$(dirname "$0")/.."

ops=mint concurrency=64 systems=handlestore duration=10s out=target/profile freq=499
while [ $# -gt 0 ]; do
  case "$1" in
    --ops|--concurrency|--systems|--duration|--out|--freq)
      [ $# -ge 2 ] || { echo "$1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --ops) ops="$2"; shift 2 ;;
    --concurrency) concurrency="$2"; shift 2 ;;
    --systems) systems="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --freq) freq="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
done

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if ! command -v perf >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "please install perf, then run again" >&2
    exit 1
  fi
  echo "installing perf (linux-perf)" >&2
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
  $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq linux-perf >&2
fi
if ! command -v inferno-flamegraph >/dev/null 2>&1; then
  echo "installing inferno (flamegraphs)" >&2
  cargo install --locked inferno >&2
fi

./deploy/install-bench-deps.sh
# The README commands' build (same features), so nothing is rebuilt twice.
./deploy/build.sh
target_dir="${CARGO_TARGET_DIR:-target}"
mkdir -p "$out"

# Call stacks by DWARF unwinding: release builds keep no frame pointers.
$sudo perf record -F "$freq" -a --call-graph dwarf,16384 -o "$out/perf.data" -- \
  "$target_dir/release/bench" --systems "$systems" --ops "$ops" --concurrency "$concurrency" \
  --duration "$duration" --out "$out"
$sudo perf script --no-inline -i "$out/perf.data" -F comm,pid,tid,cpu,time,period,event,ip,sym,dso 2>/dev/null | inferno-collapse-perf --all --pid > "$out/folded.txt"
inferno-flamegraph --minwidth 0.3 --title "$systems $ops x$concurrency (all processes)" < "$out/folded.txt" > "$out/flamegraph.svg"
echo "flamegraph: $out/flamegraph.svg (folded stacks: $out/folded.txt)" >&2
