#!/usr/bin/env bash
# A disk of its own per node, emulated: how a single client's mint grows
# with the time one sync takes.
#
#   tests/sync-sweep.sh [--delays "100 150 250 500 1000"] [--rounds 3]
#                       [--duration 5s] [--tmpfs /dev/shm] [--disk DIR]
#                       [--out target/sync-sweep]
#
# The bench puts the three nodes on one disk; in production each has its
# own. Here every node's data is on tmpfs and tests/tools/slowsync.c,
# preloaded into the nodes, makes each of their syncs last a given time
# (--delays, in µs), each node on its own, as a disk of its own would. For
# each delay, for the real disk (--disk, by default the temporary directory,
# which must not be tmpfs) and for tmpfs with no delay it runs `bench
# --systems fsync,handlestore --ops fdatasync,mint,get --concurrency 1`
# (setups in reverse order every other round) and prints a single client's
# mint against the time of one sync (docs/performance.md once set a goal of
# a mint p50 of at most 3x one fdatasync; it was retired, as three nodes
# sharing one machine's disk cannot meet it; this shows where a disk per
# node would put a single client's mint). For a delay, one sync is the p50 of
# what the nodes' slowed syncs really lasted (the shim counts them), a
# little over the delay. A real sync also costs its caller CPU and varies;
# an emulated one is a sleep. Raw results: <out>/<setup>-<round>/results.json
# and, for a delay, <out>/<setup>-<round>.syncs/ (the shim's histograms);
# the table: <out>/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

delays="100 150 250 500 1000" rounds=3 duration=5s tmpfs=/dev/shm disk="${TMPDIR:-/tmp}"
out=target/sync-sweep
while [ $# -gt 0 ]; do
  case "$1" in
    --delays|--rounds|--duration|--tmpfs|--disk|--out)
      [ $# -ge 2 ] || { echo "$1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --delays) delays="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --tmpfs) tmpfs="$2"; shift 2 ;;
    --disk) disk="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
done
for d in $delays; do
  [[ "$d" =~ ^[1-9][0-9]{0,6}$ ]] || { echo "--delays: $d is not a whole number of µs between 1 and 9999999" >&2; exit 2; }
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "--rounds: $rounds is not a positive number" >&2; exit 2; }
[ "$(stat -f -c %T "$tmpfs" 2>/dev/null)" = tmpfs ] || { echo "--tmpfs: $tmpfs is not a tmpfs mount" >&2; exit 2; }
disk_fs="$(stat -f -c %T "$disk" 2>/dev/null || echo missing)"
case "$disk_fs" in
  missing) echo "--disk: $disk is not a directory" >&2; exit 2 ;;
  tmpfs|ramfs) echo "--disk: $disk is in memory ($disk_fs): give a directory on the disk to measure" >&2; exit 2 ;;
esac

./deploy/ensure-build-deps.sh
cargo build --release --workspace --bins --examples
bench="${CARGO_TARGET_DIR:-target}/release/bench"
node="${HANDLESTORE_BIN:-${CARGO_TARGET_DIR:-target}/release/handlestore}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
shim="$out/slowsync.so"
"${CC:-cc}" -O2 -Wall -shared -fPIC -o "$shim" tests/tools/slowsync.c -ldl
data="$(mktemp -d "$tmpfs/handlestore-sync-sweep.XXXXXX")"
on_disk="$(mktemp -d "$disk/handlestore-sync-sweep.XXXXXX")"
trap 'rm -rf "$data" "$on_disk"' EXIT

# The shim must take effect: one fdatasync of dd's, made to last 50 ms.
t0=$(date +%s%N)
SLOWSYNC_COMM=dd SLOWSYNC_US=50000 LD_PRELOAD="$shim" \
  dd if=/dev/zero of="$data/check" bs=512 count=1 conv=fdatasync status=none
t1=$(date +%s%N)
if [ $(((t1 - t0) / 1000)) -lt 50000 ]; then
  echo "the preloaded $shim did not slow fdatasync (LD_PRELOAD not honoured here?)" >&2
  exit 1
fi

# One bench run; its lines for one fdatasync, a mint and a get go to $out/lines.
run() { # setup round
  local setup=$1 round=$2 dir="$out/$1-$2"
  local args=(--systems fsync,handlestore --ops fdatasync,mint,get --concurrency 1
              --duration "$duration" --out "$dir")
  if [ "$setup" = disk ]; then
    echo "== round $round: $setup" >&2
  else
    echo "== round $round: $setup (on tmpfs: the bench warns of it, as it should)" >&2
  fi
  case "$setup" in
    disk) "$bench" "${args[@]}" --data-dir "$on_disk/run" ;;
    tmpfs) "$bench" "${args[@]}" --data-dir "$data/run" ;;
    *) rm -rf "$dir.syncs" && mkdir -p "$dir.syncs"
       SLOWSYNC_US="$setup" SLOWSYNC_COMM="$(basename "$node")" LD_PRELOAD="$shim" \
         SLOWSYNC_STATS="$dir.syncs" "$bench" "${args[@]}" --data-dir "$data/run" ;;
  esac | tee "$dir.log" | awk -v s="$setup" -v r="$round" \
    '($1 == "fsync" || $1 == "handlestore") && $3 == "x1" { print s, r, $2, $7 }' >> "$out/lines"
  rm -rf "$data/run" "$on_disk/run"
  if [ -d "$dir.syncs" ]; then
    # What the nodes' slowed syncs really lasted: the p50 of the shim's
    # histograms (counter i: syncs of i µs; as many as a file has 8-byte
    # words), all nodes together.
    local p50 files=("$dir.syncs"/*.syncs)
    p50=""
    if [ -f "${files[0]}" ]; then
      p50="$(od -An -v -t u8 -w8 "${files[@]}" | awk -v n="$(($(stat -c %s "${files[0]}") / 8))" '
        { h[(NR - 1) % n] += $1; total += $1 }
        END {
          if (total == 0) exit
          for (i = 0; i < n; i++) { seen += h[i]; if (seen * 2 >= total) { print i; exit } }
        }')"
    fi
    if [ -z "$p50" ]; then
      echo "no node's sync was slowed in $dir (the shim did not reach the nodes?)" >&2
      exit 1
    fi
    echo "$setup $round sync $p50" >> "$out/lines"
  fi
}

: > "$out/lines"
setups="disk tmpfs $delays"
reversed="$(echo "$setups" | tr ' ' '\n' | tac | tr '\n' ' ')"
for round in $(seq 1 "$rounds"); do
  order="$setups"
  [ $((round % 2)) -eq 0 ] && order="$reversed"
  for setup in $order; do
    run "$setup" "$round"
  done
done

values() { # setup op: p50 of each round, in order of rounds
  awk -v s="$1" -v o="$2" '$1 == s && $3 == o { print $4 }' "$out/lines" | tr '\n' ' '
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
shown() { # each round's value, then the median in brackets
  echo "$1($(echo "$1" | median))"
}
{
  echo "A single client's mint, p50 in µs (each round's, then the median in brackets), against one sync."
  echo "disk: the nodes on the real disk, where all three share it; one sync is the bench's fdatasync there."
  echo "tmpfs: no sync costs anything. N: every node on tmpfs, each sync made to last N µs on its own;"
  echo "one sync is then the p50 of what the nodes' syncs really lasted (a woken thread runs a little late)."
  printf '%-6s  %-22s  %-22s  %-22s  %s\n' setup "one sync" "mint p50" "get p50" "mint / one sync, medians"
  for setup in $setups; do
    mint="$(values "$setup" mint)" get="$(values "$setup" get)"
    case "$setup" in
      disk) sync="$(values disk fdatasync)" ;;
      tmpfs) sync="" ;;
      *) sync="$(values "$setup" sync)" ;;
    esac
    ratio="-"
    if [ -n "$sync" ]; then
      ratio="$(awk -v m="$(echo "$mint" | median)" -v s="$(echo "$sync" | median)" 'BEGIN { printf "%.2f", m / s }')"
    fi
    if [ -n "$sync" ]; then sync="$(shown "$sync")"; fi
    printf '%-6s  %-22s  %-22s  %-22s  %s\n' "$setup" "${sync:--}" "$(shown "$mint")" "$(shown "$get")" "$ratio"
    if [[ "$setup" =~ ^[0-9]+$ ]]; then
      for m in $mint; do
        if [ "$m" -lt "$setup" ]; then
          echo "a mint took $m µs with every sync made to last $setup µs: the delay did not reach the nodes" >&2
          exit 1
        fi
      done
    fi
  done
} | tee "$out/summary.txt"
