#!/usr/bin/env bash
# Installs what some tests need beyond the build, when it is missing and it
# can: libfaketime (Debian's faketime package), which the clock tests and
# the chaos suite's clock faults preload into nodes to move their wall
# clocks; iptables, for the partitions and degraded links of the system
# tier; Python 3 with venv, for the Python client's tests and the tests
# driven by the Python MCP SDK; and promtool (Debian's prometheus package),
# which checks the alert rules and a node's /metrics. Never fails: without
# them those tests say why they skip.
set -uo pipefail

have_faketime() {
  compgen -G "/usr/lib/*/faketime/libfaketimeMT.so.1" >/dev/null 2>&1 ||
    [ -e /usr/lib/faketime/libfaketimeMT.so.1 ]
}

have_python() {
  command -v python3 >/dev/null 2>&1 &&
    python3 -c 'import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null
}

missing() {
  have_faketime || echo faketime
  have_python || echo python3 python3-venv
  # promtool checks deploy/prometheus's alert rules and a node's /metrics.
  command -v promtool >/dev/null 2>&1 || echo prometheus
  # iptables cuts a node off from its peers but not from its clients, and
  # feeds degraded links to linkem (tests/src/netns.rs), as root.
  command -v iptables >/dev/null 2>&1 || echo iptables
}

[ -z "$(missing)" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "note: $(missing | tr '\n' ' ')not installed and there is no apt-get; the tests that need them will skip" >&2
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true 2>/dev/null; then
    echo "note: $(missing | tr '\n' ' ')not installed and this is not root; the tests that need them will skip" \
      "(install these Debian packages to run them)" >&2
    exit 0
  fi
  sudo="sudo -n"
fi
# One apt at a time, as deploy/ensure-build-deps.sh.
exec 9>"${TMPDIR:-/tmp}/handlestore-apt.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
packages="$(missing | tr '\n' ' ')"
[ -z "$packages" ] && exit 0
echo "installing test dependencies: $packages" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # one word per package
if ! $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $packages >/dev/null 2>&1; then
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1
  # shellcheck disable=SC2086
  $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $packages >/dev/null 2>&1 ||
    echo "note: installing $packages failed; the tests that need them will skip" >&2
fi
exit 0
