#!/usr/bin/env bash
# Builds the handlestore image without pulling anything, for hosts with no
# registry: compiles the binaries here, then assembles an image FROM scratch
# holding them plus the exact shared libraries they load (found with ldd).
# Same tag, paths, user, volume, port and healthcheck as deploy/Dockerfile
# (its runtime lines are copied from there),
# so deploy/docker-compose.yml works unchanged.
#
#   deploy/build-image.sh                 # builds handlestore:latest
#   HANDLESTORE_IMAGE=handlestore:dev deploy/build-image.sh
#
# HANDLESTORE_BIN_DIR=DIR skips the cargo build and takes DIR/handlestore
# and DIR/examples/cart_server (the tests use this: they are built already).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="${HANDLESTORE_IMAGE:-handlestore:latest}"

if ! docker info >/dev/null 2>&1; then
  echo "build-image.sh: no Docker engine answers (is dockerd running, may this user use it?)" >&2
  exit 1
fi

if [ -n "${HANDLESTORE_BIN_DIR:-}" ]; then
  bin_dir="$HANDLESTORE_BIN_DIR"
else
  "$root/deploy/ensure-build-deps.sh"
  (cd "$root" && cargo build --release -p handlestore-node --bin handlestore \
    && cargo build --release -p handlestore-client --example cart_server)
  bin_dir="${CARGO_TARGET_DIR:-$root/target}/release"
fi
bins=("$bin_dir/handlestore" "$bin_dir/examples/cart_server")
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "build-image.sh: $b is missing" >&2; exit 1; }
done

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/etc" "$ctx/owned/data" "$ctx/owned/secrets"
cp "${bins[@]}" "$ctx/rootfs/usr/local/bin/"

# Every shared library the binaries load, and the dynamic loader, at the
# same paths as on this host.
for b in "${bins[@]}"; do
  ldd "$b" | awk '/=> \// { print $3 } /^\t\/[^ ]+ \(/ { print $1 }'
done | sort -u | while read -r lib; do
  mkdir -p "$ctx/rootfs$(dirname "$lib")"
  cp -L "$lib" "$ctx/rootfs$lib"
done

# The non-root user (no shell, no home beyond the data volume).
cat >"$ctx/rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/usr/sbin/nologin
handlestore:x:10001:10001:handlestore:/data:/usr/sbin/nologin
PASSWD
cat >"$ctx/rootfs/etc/group" <<'GROUP'
root:x:0:
handlestore:x:10001:
GROUP
# Names resolve through /etc/hosts and Docker's DNS (glibc's defaults).
echo 'hosts: files dns' >"$ctx/rootfs/etc/nsswitch.conf"

# The runtime settings (user, volume, port, healthcheck, entrypoint) are
# deploy/Dockerfile's own, from its USER line on: one source for both images.
{
  cat <<'DOCKERFILE'
FROM scratch
COPY --chown=0:0 rootfs/ /
# The data and secrets directories, owned by the user the node runs as (a
# new named volume takes its owner from here).
COPY --chown=10001:10001 owned/ /
DOCKERFILE
  sed -n '/^USER /,$p' "$root/deploy/Dockerfile"
} >"$ctx/Dockerfile"
grep -q '^HEALTHCHECK' "$ctx/Dockerfile" || { echo "build-image.sh: deploy/Dockerfile has no USER ... HEALTHCHECK tail" >&2; exit 1; }

# FROM scratch needs no base image, so nothing is pulled.
# (The legacy builder's deprecation notice is noise here: nothing else is used.)
docker build --quiet -t "$tag" "$ctx" 2> >(grep -v -e DEPRECATED -e buildx -e '^ *$' >&2) >/dev/null
echo "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
