#!/usr/bin/env bash
# Installs what some tests need beyond the build, when it is missing and it
# can: libfaketime (Debian's faketime package), which the clock tests and
# the chaos suite's clock faults preload into nodes to move their wall
# clocks. Never fails: without it those tests say why they skip.
set -uo pipefail

have_faketime() {
  compgen -G "/usr/lib/*/faketime/libfaketimeMT.so.1" >/dev/null 2>&1 ||
    [ -e /usr/lib/faketime/libfaketimeMT.so.1 ]
}

have_faketime && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "note: libfaketime is not installed and there is no apt-get; the clock tests will skip" >&2
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true 2>/dev/null; then
    echo "note: libfaketime is not installed and this is not root; the clock tests will skip" \
      "(install Debian's faketime package to run them)" >&2
    exit 0
  fi
  sudo="sudo -n"
fi
# One apt at a time, as deploy/ensure-build-deps.sh.
exec 9>"${TMPDIR:-/tmp}/handlestore-apt.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
have_faketime && exit 0
echo "installing test dependencies: faketime" >&2
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends faketime >/dev/null 2>&1; then
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1
  $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends faketime >/dev/null 2>&1 ||
    echo "note: installing faketime failed; the clock tests will skip" >&2
fi
exit 0
