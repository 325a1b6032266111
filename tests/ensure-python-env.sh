#!/usr/bin/env bash
# Creates the virtual environment the Python tests use (the official MCP SDK,
# FastMCP, tests/python/requirements.txt, and the Python client in
# client/python, editable), when it is missing or out of date, and prints its
# interpreter's path. Python 3.10+ and PyPI are
# needed; when either is missing it says why on stderr and prints nothing,
# and those tests skip with that reason. Never fails.
set -uo pipefail
cd "$(dirname "$0")/.."
venv="${HANDLESTORE_VENV:-$HOME/.cache/handlestore/venv}"
req=tests/python/requirements.txt
stamp="$venv/.requirements"
# What the environment was made from: the pinned packages, the client's
# own dependencies, and which clone's client is installed (editable).
want="$(pwd)/client/python
$(cat "$req" client/python/pyproject.toml)"

python=""
for p in python3 python; do
  if command -v "$p" >/dev/null 2>&1 &&
    "$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
    python="$p"
    break
  fi
done
if [ -z "$python" ]; then
  echo "note: no Python 3.10 or newer; the Python tests will skip" >&2
  exit 0
fi
if [ -x "$venv/bin/python" ] && [ "$want" = "$(cat "$stamp" 2>/dev/null)" ]; then
  echo "$venv/bin/python"
  exit 0
fi
if ! "$python" -m venv "$venv" >/dev/null 2>&1; then
  echo "note: '$python -m venv' failed (Debian: apt-get install python3-venv); the Python tests will skip" >&2
  exit 0
fi
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2; then
  echo "note: installing $req failed (no PyPI?); the Python tests will skip" >&2
  exit 0
fi
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check -e client/python >&2; then
  echo "note: installing the Python client (client/python) failed; the Python tests will skip" >&2
  exit 0
fi
printf '%s' "$want" >"$stamp"
echo "$venv/bin/python"
