#!/usr/bin/env bash
# Build a demo ledger from the examples the project ships, run the verifier on the
# Task-001 calibration fixture, and verify the result's whole provenance chain.
#   ./scripts/demo.sh                                  # the ledger is demo/ledger.db
#   ./scripts/demo.sh postgresql://USER@HOST/evidence  # an empty PostgreSQL database
#                                                        (needs: pip install -e '.[postgres]')
# Every file it writes (keys, outputs) goes to demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
EXTRA=
case "${1:-}" in postgresql://* | postgres://*) EXTRA='[postgres]' ;; esac
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".$EXTRA"

ROOT=$PWD
PL=$ROOT/.venv/bin/provledger
FIX=$ROOT/verifiers/fixtures/calibration
rm -rf demo && mkdir demo && cd demo
# A URL's key files default to ./<dbname>.log.key and ./<dbname>.authority.key: here, demo/.
export PROVLEDGER_DB=${1:-ledger.db}

step() { printf '\n== %s\n' "$*"; }

step "create the ledger (log key + authority key next to it)"
$PL init

step "a verifier key and its authority-attested identity"
$PL key generate verifier.key
$PL identity register --verifier-id idkmesh-local-verifier \
  --adapter deterministic-patch-verifier --adapter-version 0.3.0 \
  --public-key verifier.key.pub

step "append the WorkUnit and the three calibration plans"
$PL append "$FIX/work-unit.json" "$FIX"/plans/*.json

step "run the v0.4 verifier on the straightforward repair (records inputs, result, attestation)"
$PL run-verifier --work-unit "$FIX/work-unit.json" --plan "$FIX/plans/evaluator-plan-v0.4.json" \
  --manifest "$FIX/manifests/repair.result-manifest.json" \
  --candidate-root "$FIX/candidates/repair" --key verifier.key --json > repair.json
RESULT=$("$ROOT/.venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["result_digest"])' repair.json)
echo "repair: $("$ROOT/.venv/bin/python" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["status"], d["recommendation"], d["result_digest"])' repair.json)"

step "run it on the inert decoy (the v0.4 plan rejects it: exit 1 is expected)"
set +e
$PL run-verifier --work-unit "$FIX/work-unit.json" --plan "$FIX/plans/evaluator-plan-v0.4.json" \
  --manifest "$FIX/manifests/decoy.result-manifest.json" \
  --candidate-root "$FIX/candidates/decoy" --key verifier.key
echo "decoy run exit code: $? (1 = failed verification, as calibrated)"
set -e

step "sign the tree head and show the log"
$PL checkpoint
$PL log

step "the calibration table (v0.2 / v0.3 / v0.4 x repair / decoy)"
$PL calibrate

step "verify the repair result's whole provenance chain"
$PL provenance "$RESULT"

step "full audit of the ledger"
$PL verify
