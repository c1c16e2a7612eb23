#!/usr/bin/env bash
# Make .venv with the test extras, then run ruff, mypy --strict and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
echo "== ruff"
.venv/bin/ruff check .
echo "== mypy --strict (ledger, verifiers, cohorts)"
.venv/bin/mypy
echo "== pytest"
.venv/bin/pytest "$@"
