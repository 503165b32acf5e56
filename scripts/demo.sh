#!/usr/bin/env bash
# The main job on the bundled example store: check it, build its site, serve it on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e . 2>&1 | grep -v "is ignored" || true
.venv/bin/codexmem check --store store-example --quiet
.venv/bin/codexmem summary --store store-example
exec .venv/bin/codexmem site --store store-example --out _site --serve "$@"
