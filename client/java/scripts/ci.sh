#!/usr/bin/env bash
# The Java client's checks (client/java), in one `mvn verify`: the code
# generated at build time from proto/ (pinned protoc and grpc-java plugin,
# the error table by src/build/java/GenReasons.java: nothing generated is
# committed, so nothing can drift), every plugin pinned (the enforcer),
# javac with -Xlint:all -Werror, the tests, then the format check
# (Spotless with google-java-format). The cluster tests start real clusters
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
mvn -B -ntp -Dsurefire.failIfNoSpecifiedTests=false verify "$@"
../../tests/clusters-ran.sh java
