#!/usr/bin/env bash
# Installs what building handlestore needs beyond Rust, when it is missing:
# a C++ compiler (RocksDB is compiled from source) and libclang (bindgen
# generates RocksDB's Rust bindings). Debian/Ubuntu only; elsewhere it says
# what to install. protoc is vendored by the build, nothing to install.
set -euo pipefail

have_libclang() {
  # clang-sys (bindgen) loads libclang at build time.
  local d
  for d in /usr/lib/llvm-*/lib /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
    has_libclang_in "$d" && return 0
  done
  [ -n "${LIBCLANG_PATH:-}" ] && has_libclang_in "$LIBCLANG_PATH"
}

has_libclang_in() {
  # libclang.so.N or libclang-N.so.M; not libclang-cpp (clang's C++ API,
  # which LLVM packages install on their own and bindgen cannot use).
  compgen -G "$1/libclang.so*" >/dev/null 2>&1 || compgen -G "$1/libclang-[0-9]*.so*" >/dev/null 2>&1
}

find_missing() {
  missing=()
  have_libclang || missing+=(libclang-dev)
  command -v c++ >/dev/null 2>&1 || missing+=(g++)
}
find_missing
command -v cargo >/dev/null 2>&1 || {
  echo "cargo is not installed: install Rust from https://rustup.rs first" >&2
  exit 1
}

[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "please install: ${missing[*]} (libclang and a C++ compiler), then run again" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "need root to install ${missing[*]}: run as root or install sudo" >&2
    exit 1
  }
  sudo="sudo"
fi
# One apt at a time (the test command and CI may both get here), then look
# again: the other run may have installed it all.
exec 9>"${TMPDIR:-/tmp}/handlestore-apt.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
find_missing
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing build dependencies: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
