#!/usr/bin/env bash
# The Java artifacts as a user gets them (issue 101, point 5): `mvn install`
# (of the parent, handlestore-client and handlestore-examples: what the
# empty project needs) puts them into the local Maven repository (~/.m2,
# where CI caches it),
# then an empty Maven project
# in a temporary directory, depending on io.github.handlestore:
# handlestore-examples and handlestore-client by coordinates only, resolves
# its classpath from that repository and runs the cart example from it
# (`java -cp <its classpath> io.github.handlestore.examples.cart.CartServer`)
# against a three-node cluster of the handlestore binary (`handlestore dev`,
# TLS and auth on, reached through the HANDLESTORE_* variables it prints);
# two MCP calls with curl (create_cart, then get_cart of that cart) prove
# that it serves. It fails if the artifacts are missing: the empty project's
# resolution fails (checked first on a version that was never installed),
# and the examples jar it resolves must be the one the build just made.
#
#   scripts/packaging-test.sh              mvn install -DskipTests first
#   scripts/packaging-test.sh --no-install what scripts/ci.sh runs, after
#                                          its own mvn install of everything
#
# The binary: $HANDLESTORE_BIN, else target/release/handlestore under
# $CARGO_TARGET_DIR, the repository or ~/.cache/handlestore (the test kit's
# rule); without one it skips, saying why, or fails where
# HANDLESTORE_REQUIRE_BIN=1. Skipped, saying why, without Java 17+, Maven
# or curl.
set -euo pipefail
cd "$(dirname "$0")/.."
java_dir="$PWD"
repo="$(cd ../.. && pwd)"
install=1
case "${1:-}" in
  --no-install) install=0 ;;
  "") ;;
  *) echo "usage: $0 [--no-install]" >&2; exit 2 ;;
esac

skip() {
  echo "SKIPPED: the Java packaging test: $*"
  exit 0
}
for tool in java mvn curl; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed"
done
version="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')"
if [ -z "$version" ] || [ "${version%%.*}" -lt 17 ] 2>/dev/null; then
  skip "java ${version:-unknown} is older than 17"
fi
bin="${HANDLESTORE_BIN:-}"
if [ -z "$bin" ]; then
  for b in ${CARGO_TARGET_DIR:+"$CARGO_TARGET_DIR/release/handlestore"} \
    "$repo/target/release/handlestore" "$HOME/.cache/handlestore/target/release/handlestore"; do
    if [ -x "$b" ]; then bin="$b"; break; fi
  done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  why="no handlestore binary (${bin:-set HANDLESTORE_BIN or cargo build --release})"
  if [ "${HANDLESTORE_REQUIRE_BIN:-}" = 1 ]; then
    echo "the Java packaging test: $why (HANDLESTORE_REQUIRE_BIN=1)" >&2
    exit 1
  fi
  skip "$why"
fi

# The project's version, from the parent POM (the line after its artifactId).
v="$(sed -n '/<artifactId>handlestore-parent<\/artifactId>/{n;s/.*<version>\(.*\)<\/version>.*/\1/p;q}' pom.xml)"
[ -n "$v" ] || { echo "no version in client/java/pom.xml" >&2; exit 1; }
mvn_args=(-B -ntp -q)
if [ "$install" = 1 ]; then
  echo "packaging: mvn install -DskipTests of handlestore-examples $v and what it needs"
  mvn "${mvn_args[@]}" -DskipTests -pl examples -am install
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/handlestore-java-packaging-XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# An empty project: a POM with the two dependencies, nothing else.
consumer() { # consumer DIR VERSION
  mkdir -p "$1"
  cat >"$1/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>cart-from-maven</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>io.github.handlestore</groupId>
      <artifactId>handlestore-examples</artifactId>
      <version>$2</version>
    </dependency>
    <dependency>
      <groupId>io.github.handlestore</groupId>
      <artifactId>handlestore-client</artifactId>
      <version>$2</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>3.11.0</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF
}
classpath() { # classpath DIR: the project's runtime classpath, into DIR/classpath.txt
  mvn "${mvn_args[@]}" -f "$1/pom.xml" dependency:build-classpath \
    -Dmdep.includeScope=runtime -Dmdep.outputFile="$1/classpath.txt"
}

# The check itself: artifacts that are not in the repository are refused.
consumer "$work/absent" "0.0.0-never-installed"
if classpath "$work/absent" >"$work/absent.log" 2>&1; then
  echo "the Java packaging test: a version never installed resolved; the check would pass unseen" >&2
  exit 1
fi

consumer "$work/app" "$v"
if ! classpath "$work/app" >"$work/app.log" 2>&1; then
  cat "$work/app.log" >&2
  echo "the Java packaging test: io.github.handlestore:handlestore-examples:$v is not installed" >&2
  exit 1
fi
cp="$(cat "$work/app/classpath.txt")"
examples_jar="$(tr ':' '\n' <"$work/app/classpath.txt" | grep "/handlestore-examples-$v.jar\$" || true)"
if [ -z "$examples_jar" ] || ! cmp -s "$examples_jar" "examples/target/handlestore-examples-$v.jar"; then
  echo "the Java packaging test: the installed handlestore-examples ($examples_jar) is not the one just built" >&2
  exit 1
fi

# A three-node cluster on three free loopback ports: `handlestore dev`, with
# TLS and auth on, which prints the HANDLESTORE_* variables that reach it.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=""
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 40000))
  if port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)); then base="$p"; break; fi
done
[ -n "$base" ] || { echo "no three free ports" >&2; exit 1; }
"$bin" dev --data "$work/cluster" --base-port "$base" >"$work/cluster.log" 2>&1 &
pids+=($!)
ready=""
for _ in $(seq 1 300); do
  if grep -q '^ *export HANDLESTORE_ENDPOINTS=' "$work/cluster.log"; then
    eval "$(sed -n 's/^ *\(export HANDLESTORE_[A-Z_]*=[^ ]*\)$/\1/p' "$work/cluster.log")"
    if "$bin" status 2>/dev/null | grep -q '^leader: node'; then ready=1; break; fi
  fi
  sleep 0.2
done
if [ -z "$ready" ]; then
  tail -20 "$work/cluster.log" >&2
  echo "the Java packaging test: the cluster elected no leader" >&2
  exit 1
fi

# The cart example, from the empty project's classpath.
(cd "$work/app" && exec java -Xmx256m -cp "$cp" io.github.handlestore.examples.cart.CartServer \
  --listen 127.0.0.1:0 >"$work/cart.out" 2>"$work/cart.err") &
pids+=($!)
port=""
for _ in $(seq 1 300); do
  port="$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$work/cart.out")"
  [ -n "$port" ] && break
  sleep 0.2
done
if [ -z "$port" ]; then
  tail -20 "$work/cart.err" >&2
  echo "the Java packaging test: the cart example never printed 'listening <port>'" >&2
  exit 1
fi

# One MCP call on protocol 2026-07-28 (each request carries its envelope).
call() { # call TOOL ARGUMENTS-JSON
  local meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
  curl -sS --max-time 30 -X POST "http://127.0.0.1:$port/mcp" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H "Mcp-Name: $1" \
    --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":$2,$meta}}"
}
created="$(call create_cart '{}')"
cart="$(printf '%s' "$created" | sed -n 's/.*"structuredContent":{"cart_id":"\(cart-[A-Z2-7]\{26\}\)"}.*/\1/p')"
if [ -z "$cart" ]; then
  echo "the Java packaging test: create_cart answered $created" >&2
  exit 1
fi
shown="$(call get_cart "{\"cart_id\":\"$cart\"}")"
case "$shown" in
  *"\"structuredContent\":{\"cart_id\":\"$cart\",\"cart\":{\"lines\":[]}}"*) ;;
  *) echo "the Java packaging test: get_cart answered $shown" >&2; exit 1 ;;
esac
echo "packaging: an empty Maven project ran handlestore-examples $v from the local repository: $cart served"
