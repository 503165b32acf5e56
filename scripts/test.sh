#!/usr/bin/env bash
# Set everything up and run the whole test suite: ruff, mypy, pytest.
# Creates .venv if needed, installs .[test], installs Chromium (Debian package) for the browser
# tests when it is missing and apt is available. Safe to run again: it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
echo "== installing codexmem[test]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test]" 2>&1 | grep -v "is ignored" || true
.venv/bin/python -c "import codexmem, mcp, pagefind, playwright" >/dev/null

if [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "== installing chromium (Debian package) for the browser tests"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "== chromium is missing and apt-get is not usable: browser tests will be skipped"
  fi
fi

echo "== ruff"
.venv/bin/ruff check codexmem
.venv/bin/ruff format --check codexmem tests bench scripts
echo "== mypy"
.venv/bin/mypy codexmem
echo "== pytest"
.venv/bin/python -m pytest "$@"
