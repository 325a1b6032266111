#!/usr/bin/env bash
# The Java client's checks (client/java), in one `mvn verify`: the code
# generated at build time from proto/ (pinned protoc and grpc-java plugin,
# the error table by src/build/java/GenReasons.java: nothing generated is
# committed, so nothing can drift), every plugin pinned (the enforcer),
# javac with -Xlint:all -Werror, the tests, then the format check
# (Spotless with google-java-format), and the packaging test
# (scripts/packaging-test.sh: the installed artifacts used from an empty
# Maven project). The cluster tests start real clusters
# of the handlestore binary ($HANDLESTORE_BIN, else target/release/handlestore
# under $CARGO_TARGET_DIR, the repository or ~/.cache/handlestore); without
# one they skip, saying why, or fail where HANDLESTORE_REQUIRE_BIN=1, as the
# test command runs them; there it also fails if they started no cluster.
# Maven's repository stays where Maven keeps it (~/.m2, outside the clone),
# so a second run downloads nothing. Arguments go to mvn (-Dtest=Handles*).
# Skipped, saying why, where Java 17+ or Maven is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  echo "SKIPPED: the Java client (client/java): java or mvn is not installed"
  exit 0
fi
version="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')"
if [ "${version%%.*}" -lt 17 ] 2>/dev/null || [ -z "$version" ]; then
  echo "SKIPPED: the Java client (client/java): java ${version:-unknown} is older than 17"
  exit 0
fi
# -B: no colours or prompts; -ntp: no download progress lines in CI's log.
# install (verify, then the artifacts into ~/.m2) for the packaging test.
mvn -B -ntp -Dsurefire.failIfNoSpecifiedTests=false install "$@"
../../tests/clusters-ran.sh java
# An empty Maven project depends on what was just installed, by coordinates
# only, and runs the cart example from it against a cluster.
scripts/packaging-test.sh --no-install
