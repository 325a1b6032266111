#!/usr/bin/env bash
# Installs what the benchmark harness compares against, when missing:
#  - Debian's Redis (redis-server) and etcd 3.4 (etcd-server of the
#    machine's suite: the bench's `etcd-3.4`, for the history table);
#  - etcd 3.7.3, the bench's `etcd`: built with the machine's Go from the
#    Go module proxy, its modules pinned by deploy/etcd/go.mod and go.sum
#    (etcd's own server, `etcdmain.Main`);
#  - etcd 3.5.30 (the bench's `etcd-3.5`) and NATS 2.15.1, taken from
#    Debian's unstable suite without touching the machine's apt sources (a
#    sources list and package lists of its own, `apt-get download`,
#    `dpkg-deb -x`);
#  each into $HANDLESTORE_PEERS (default ~/.cache/handlestore/peers)/bin,
#  checked by the version it prints. Where the unstable suite cannot be
#  reached, bin/etcd-3.5 is the machine's etcd, with a warning.
# The harness starts its own instances on free loopback ports and stops
# them; the packaged services are not used.
set -euo pipefail

ETCD_PRINTS="etcd Version: 3.7.3"
ETCD35_DEB="3.5.30-2"
ETCD35_PRINTS="etcd Version: 3.5.30"
NATS_DEB="2.15.1-1"
NATS_PRINTS="nats-server: v2.15.1"
peers="${HANDLESTORE_PEERS:-$HOME/.cache/handlestore/peers}"
# Where the unstable suite is taken from (a mirror of Debian's, if need be).
mirror="${HANDLESTORE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# True when $1 runs and prints $2 for --version.
# (grep reads all: with pipefail, `grep -q` leaving early fails the pipe.)
prints() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -F "$2" >/dev/null; }

find_missing() {
  missing=()
  command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  peers_missing=()
  prints "$peers/bin/etcd-3.5" "$ETCD35_PRINTS" || peers_missing+=(etcd-3.5)
  prints "$peers/bin/nats-server" "$NATS_PRINTS" || peers_missing+=(nats)
}

# etcd 3.7.3 from deploy/etcd (its go.sum checks every module fetched).
build_etcd() {
  prints "$peers/bin/etcd" "$ETCD_PRINTS" && return 0
  # An earlier version of this script kept 3.5.30 as bin/etcd.
  if prints "$peers/bin/etcd" "$ETCD35_PRINTS" && ! prints "$peers/bin/etcd-3.5" "$ETCD35_PRINTS"; then
    mv "$peers/bin/etcd" "$peers/bin/etcd-3.5"
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "please install Go (1.26 or later): the bench's etcd 3.7.3 is built from deploy/etcd with it" >&2
    return 1
  fi
  echo "building etcd 3.7.3 from deploy/etcd into $peers/bin (a minute, once)" >&2
  mkdir -p "$peers/bin"
  (cd "$(dirname "$0")/etcd" && GOFLAGS=-mod=readonly go build -trimpath -o "$peers/bin/etcd.new" .) &&
    mv "$peers/bin/etcd.new" "$peers/bin/etcd"
  prints "$peers/bin/etcd" "$ETCD_PRINTS" || { echo "$peers/bin/etcd does not print $ETCD_PRINTS" >&2; return 1; }
}
find_missing
[ ${#missing[@]} -eq 0 ] && [ ${#peers_missing[@]} -eq 0 ] && prints "$peers/bin/etcd" "$ETCD_PRINTS" && exit 0

# Several test processes may get here at once on a fresh machine: Go's
# build and apt take one at a time, so wait for any other run of this
# script, then look again.
exec 9>"${TMPDIR:-/tmp}/handlestore-apt.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
etcd_built=0
build_etcd || etcd_built=1
find_missing
[ ${#missing[@]} -eq 0 ] && [ ${#peers_missing[@]} -eq 0 ] && exit $etcd_built

if ! command -v apt-get >/dev/null 2>&1; then
  echo "please install: ${missing[*]} ${peers_missing[*]} (Redis, etcd 3.4 and 3.5.30, nats-server 2.15.1; see $0), then run again" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing benchmark dependencies: ${missing[*]}" >&2
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
  # Installing must not start the packaged services (no policy-rc.d here
  # means they would start where an init system runs them): the harness
  # runs its own.
  $sudo env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ ${#peers_missing[@]} -eq 0 ] && exit $etcd_built

# The unstable suite's packages, with apt state of our own: the machine's
# sources and lists stay as they were.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$peers/bin"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror unstable main" >"$work/sources.list"
apt_own=(-o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=/nonexistent
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
echo "fetching etcd $ETCD35_DEB and nats-server $NATS_DEB from Debian's unstable suite into $peers" >&2
if apt-get "${apt_own[@]}" update -qq >"$work/update.log" 2>&1 &&
  (cd "$work" && apt-get "${apt_own[@]}" download -qq "etcd-server=$ETCD35_DEB" "nats-server=$NATS_DEB") >>"$work/update.log" 2>&1; then
  for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
  install -m 0755 "$work/root/usr/bin/etcd" "$peers/bin/etcd-3.5"
  install -m 0755 "$work/root/usr/sbin/nats-server" "$peers/bin/nats-server"
else
  cat "$work/update.log" >&2
  if ! prints "$peers/bin/etcd-3.5" "$ETCD35_PRINTS"; then
    echo "WARNING: Debian's unstable suite could not be reached: the bench's etcd-3.5 is the machine's ($(etcd --version | head -1)), not 3.5.30" >&2
    ln -sf "$(command -v etcd)" "$peers/bin/etcd-3.5"
  fi
  echo "nats-server $NATS_DEB could not be fetched: the bench's nats systems will not start" >&2
  exit 1
fi
prints "$peers/bin/etcd-3.5" "$ETCD35_PRINTS" || { echo "$peers/bin/etcd-3.5 does not print $ETCD35_PRINTS" >&2; exit 1; }
prints "$peers/bin/nats-server" "$NATS_PRINTS" || { echo "$peers/bin/nats-server does not print $NATS_PRINTS" >&2; exit 1; }
exit $etcd_built
