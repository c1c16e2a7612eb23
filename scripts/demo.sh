#!/usr/bin/env bash
# Build a demo ledger from the examples the project ships, run the verifier on the
# Task-001 calibration fixture, and verify the result's whole provenance chain.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .

PL=.venv/bin/provledger
FIX=verifiers/fixtures/calibration
rm -rf demo && mkdir demo
export PROVLEDGER_DB=demo/ledger.db

step() { printf '\n== %s\n' "$*"; }

step "create the ledger (log key + authority key next to it)"
$PL init

step "a verifier key and its authority-attested identity"
$PL key generate demo/verifier.key
$PL identity register --verifier-id idkmesh-local-verifier \
  --adapter deterministic-patch-verifier --adapter-version 0.3.0 \
  --public-key demo/verifier.key.pub

step "append the WorkUnit and the three calibration plans"
$PL append "$FIX/work-unit.json" "$FIX"/plans/*.json

step "run the v0.4 verifier on the straightforward repair (records inputs, result, attestation)"
$PL run-verifier --work-unit "$FIX/work-unit.json" --plan "$FIX/plans/evaluator-plan-v0.4.json" \
  --manifest "$FIX/manifests/repair.result-manifest.json" \
  --candidate-root "$FIX/candidates/repair" --key demo/verifier.key --json > demo/repair.json
RESULT=$(.venv/bin/python -c 'import json,sys; print(json.load(open(sys.argv[1]))["result_digest"])' demo/repair.json)
echo "repair: $(.venv/bin/python -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["status"], d["recommendation"], d["result_digest"])' demo/repair.json)"

step "run it on the inert decoy (the v0.4 plan rejects it: exit 1 is expected)"
set +e
$PL run-verifier --work-unit "$FIX/work-unit.json" --plan "$FIX/plans/evaluator-plan-v0.4.json" \
  --manifest "$FIX/manifests/decoy.result-manifest.json" \
  --candidate-root "$FIX/candidates/decoy" --key demo/verifier.key
echo "decoy run exit code: $? (1 = failed verification, as calibrated)"
set -e

step "sign the tree head and show the log"
$PL checkpoint
$PL log

step "the calibration table (v0.2 / v0.3 / v0.4 x repair / decoy)"
$PL calibrate

step "verify the repair result's whole provenance chain"
$PL provenance "$RESULT"

step "full audit of the ledger file"
$PL verify
