#!/usr/bin/env bash
# Builds the image of the Compose file's `metrics` profile without pulling
# anything, for hosts with no registry: Debian's prometheus binary (the
# package is installed when missing) and the exact shared libraries it
# loads, FROM scratch, with deploy/prometheus's configuration and alert
# rules. Same tag as deploy/prometheus/Dockerfile makes.
#
#   deploy/build-prometheus-image.sh      # builds handlestore-prometheus:latest
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="${HANDLESTORE_PROMETHEUS_IMAGE:-handlestore-prometheus:latest}"

if ! docker info >/dev/null 2>&1; then
  echo "build-prometheus-image.sh: no Docker engine answers (is dockerd running, may this user use it?)" >&2
  exit 1
fi
if ! command -v prometheus >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  exec 9>"${TMPDIR:-/tmp}/handlestore-apt.lock"
  if command -v flock >/dev/null 2>&1; then flock 9; fi
  command -v prometheus >/dev/null 2>&1 || {
    echo "installing Debian's prometheus package" >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends prometheus >/dev/null
  }
fi
bin="$(command -v prometheus)"

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/bin" "$ctx/rootfs/etc/prometheus" "$ctx/rootfs/tmp" "$ctx/owned/prometheus"
cp "$bin" "$ctx/rootfs/bin/prometheus"
cp "$root/deploy/prometheus/prometheus.yml" "$root/deploy/prometheus/alerts.yml" "$ctx/rootfs/etc/prometheus/"
# Every shared library it loads (none for a static build), and the loader.
ldd "$bin" 2>/dev/null | awk '/=> \// { print $3 } /^\t\/[^ ]+ \(/ { print $1 }' | sort -u | while read -r lib; do
  mkdir -p "$ctx/rootfs$(dirname "$lib")"
  cp -L "$lib" "$ctx/rootfs$lib"
done
echo 'nobody:x:65534:65534:nobody:/prometheus:/usr/sbin/nologin' >"$ctx/rootfs/etc/passwd"
echo 'nogroup:x:65534:' >"$ctx/rootfs/etc/group"
echo 'hosts: files dns' >"$ctx/rootfs/etc/nsswitch.conf"
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
# The database directory, owned by the user Prometheus runs as (a new
# named volume takes its owner from here).
COPY --chown=65534:65534 owned/ /
USER 65534:65534
EXPOSE 9090
VOLUME /prometheus
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
DOCKERFILE
chmod 1777 "$ctx/rootfs/tmp"
docker build --quiet -t "$tag" "$ctx" 2> >(grep -v -e DEPRECATED -e buildx -e '^ *$' >&2) >/dev/null
echo "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
