"""One example per command, appended to its ``--help`` (by ``ProvGroup``).

Keyed by the command path below ``provledger``. A test walks every command and
requires an entry here, so a new command cannot ship without an example. A digest an
example names is one of the IDKMesh reference corpus (``import idkmesh``) or the demo, and
``tests/test_examples_run.py`` runs every such example on a ledger holding both; digests
that differ per ledger (attestations, calibration records) are written as placeholders.
"""

from __future__ import annotations

EXAMPLES: dict[str, str] = {
    "init": "provledger init --db ledger.db",
    "append": "provledger append work-unit.json result-manifest.json",
    "show": "provledger show sha256:11d3bdaf",
    "log": "provledger log --kind benchmark-cohort --limit 20",
    "stats": "provledger stats --json",
    "copy": "provledger copy ledger.db postgresql://writer@db.example.org/evidence",
    "migrate": "provledger migrate --db old-ledger.db",
    "checkpoint": "provledger checkpoint",
    "verify": "provledger verify --authority-key ledger.db.authority.key.pub",
    "sign": "provledger sign sha256:05cde97b --key verifier.key",
    "provenance": "provledger provenance phase0/smoke-verification/attempt-1",
    "run-verifier": (
        "provledger run-verifier --work-unit wu.json --plan plan.json --manifest rm.json"
        " --candidate-root out/ --key verifier.key"
    ),
    "calibrate": "provledger calibrate --record --key verifier.key",
    "proof inclusion": "provledger proof inclusion sha256:11d3bdaf",
    "proof consistency": "provledger proof consistency 10 20",
    "bundle export": "provledger bundle export sha256:05cde97b --output result.bundle.json",
    "bundle verify": "provledger bundle verify result.bundle.json --log-key ledger.db.log.key.pub",
    "witness init": (
        'provledger witness init witness.example/w1 --state w1.json --log-key "$(cat log.vkey)"'
    ),
    "witness add-log": 'provledger witness add-log "$(cat other-log.vkey)" --state w1.json',
    "witness show": "provledger witness show --state w1.json --json",
    "witness latest": "provledger witness latest --state w1.json > saved.note",
    "witness cosign": (
        "provledger witness cosign checkpoint.note --proof consistency.json --state w1.json"
    ),
    "witness serve": "provledger witness serve --state w1.json --port 8411",
    "key generate": "provledger key generate verifier.key",
    "identity register": (
        "provledger identity register --verifier-id idkmesh-local-verifier"
        " --adapter deterministic-patch-verifier --adapter-version 0.3.0"
        " --public-key verifier.key.pub"
    ),
    "identity list": "provledger identity list",
    "identity show": "provledger identity show idkmesh-local-verifier",
    "identity revoke": "provledger identity revoke KEY_ID --reason retired",
    "attestation check": "provledger attestation check sha256:11d3bdaf",
    "attestation export": (
        "provledger attestation export ATTESTATION_DIGEST --output envelope.json"
    ),
    "attestation import": "provledger attestation import envelope.json",
    "attestation verify-envelope": "provledger attestation verify-envelope envelope.json",
    "export intoto": "provledger export intoto sha256:05cde97b --key verifier.key",
    "import jsonl": "provledger import jsonl objects.jsonl",
    "import idkmesh": "provledger import idkmesh ../idkmesh",
    "cohort digest": "provledger cohort digest benchmarks/phase-b2-first-five/cohort.json",
    "cohort freeze": "provledger cohort freeze cohort.json",
    "cohort burn": (
        "provledger cohort burn benchmark/toy --reason 'evaluator defect seen after outcomes'"
    ),
    "cohort bind": (
        "provledger cohort bind toy-v2 --predecessor toy-v1 --plan TASK=PLAN_ID@0.4"
        " --calibration CALIBRATION_DIGEST"
    ),
    "cohort draft-successor": (
        "provledger cohort draft-successor benchmark/phase-b2-first-five -o successor"
        " --id team/first-five-successor --removed 'TASK=old line text'"
    ),
    "cohort record-outcome": (
        "provledger cohort record-outcome example/toy-v2 --task example/toy/002-division-test"
        " --result RESULT_DIGEST"
    ),
    "cohort audit": "provledger cohort audit benchmark/phase-b2-first-five",
    "cohort list": "provledger cohort list --json",
    "index": "provledger index --out ledger.browse.db",
    "serve": "provledger serve --browse ledger.browse.db --port 8001",
    "behavioral run": (
        "provledger behavioral run --source-tree src/ --patch candidate.patch"
        " --probes probes.json --verification-result sha256:05cde97b"
    ),
}


def example_for(path: str) -> str | None:
    """The example for a command path such as ``cohort audit``; None if there is none."""
    return EXAMPLES.get(path)
