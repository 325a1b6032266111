#!/usr/bin/env bash
# Installs what the benchmark harness compares against, when missing:
# Debian's etcd (etcd-server) and Redis (redis-server). The harness starts
# its own instances on free loopback ports and stops them; the packaged
# services are not used.
set -euo pipefail

missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "please install: ${missing[*]} (etcd and Redis), then run again" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing benchmark dependencies: ${missing[*]}" >&2
$sudo apt-get update -qq
# Installing must not start the packaged services (no policy-rc.d here means
# they would start where an init system runs them): the harness runs its own.
$sudo env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
