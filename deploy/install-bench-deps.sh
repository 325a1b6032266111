#!/usr/bin/env bash
# Installs what the benchmark harness compares against, when missing:
# Debian's etcd (etcd-server) and Redis (redis-server). The harness starts
# its own instances on free loopback ports and stops them; the packaged
# services are not used.
set -euo pipefail

find_missing() {
  missing=()
  command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
}
find_missing
[ ${#missing[@]} -eq 0 ] && exit 0

# Several test processes may get here at once on a fresh machine: apt takes
# one at a time, so wait for any other run of this script, then look again.
exec 9>"${TMPDIR:-/tmp}/handlestore-apt.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
find_missing
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "please install: ${missing[*]} (etcd and Redis), then run again" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing benchmark dependencies: ${missing[*]}" >&2
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
# Installing must not start the packaged services (no policy-rc.d here means
# they would start where an init system runs them): the harness runs its own.
$sudo env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
