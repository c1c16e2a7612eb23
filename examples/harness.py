"""A small evaluation harness on provledger's Python API (docs/API.md).

It does what a harness benchmarking coding agents does, in one process: it creates a
ledger, registers its verifier's key, judges two candidate patches for one task (the
Task 001 calibration fixture that ships with provledger: a straightforward repair and an
inert decoy), records each run as it goes, signs the tree head, and then shows the
provenance of every result it recorded, as an auditor would check it.

    python examples/harness.py                      # a new ledger in a temporary directory
    python examples/harness.py DIR                  # ... in DIR (created; must not hold one)
    python examples/harness.py DIR postgresql://... # the ledger in an empty database

Exit 0 when every verdict is the one the fixture expects and every provenance chain and
the whole ledger verify; 1 otherwise; a provledger error exits with its own code (e.g. 4
when DIR already holds a ledger: nothing is overwritten).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from cohorts.api import provenance
from cohorts.provenance import Check
from ledger.api import generate_key, init_ledger, load_signer, open_ledger
from ledger.errors import LedgerError
from verifiers.api import FIXTURE_DIR, run_verifier

#: The candidates the harness judges, and the status the fixture expects for each.
CANDIDATES = {"repair": "passed", "decoy": "failed"}
PLAN = FIXTURE_DIR / "plans" / "evaluator-plan-v0.4.json"


def show(check: Check, depth: int = 0) -> None:
    """One line per check of a provenance chain; the parts of a failed check below it."""
    mark = "ok  " if check.ok else "FAIL"
    print(f"{'  ' * depth}{mark} {check.name}: {check.reason}")
    for child in check.children if not check.ok else ():
        show(child, depth + 1)


def evaluate(workdir: Path, db: str) -> bool:
    created = init_ledger(
        db,
        log_key=workdir / "log.key",
        authority_key=workdir / "authority.key",
    )
    generate_key(workdir / "verifier.key")
    verifier = load_signer(workdir / "verifier.key")
    authority = load_signer(workdir / "authority.key")
    results: dict[str, str] = {}
    ok = True
    with open_ledger(db) as book:
        book.register_identity(
            verifier_id="idkmesh-local-verifier",
            adapter="deterministic-patch-verifier",
            adapter_versions=["0.3.0"],
            public_key=workdir / "verifier.key.pub",
            authority=authority,
        )
        for candidate, expected in CANDIDATES.items():
            run = run_verifier(
                book,
                work_unit=FIXTURE_DIR / "work-unit.json",
                plan=PLAN,
                manifest=FIXTURE_DIR / "manifests" / f"{candidate}.result-manifest.json",
                candidate_root=FIXTURE_DIR / "candidates" / candidate,
                signer=verifier,
            )
            recorded = sum(1 for item in run.recorded if item.status == "new")
            print(f"{candidate}: {run.status} ({run.recommendation}), {recorded} objects recorded")
            print(f"  result {run.result_digest}")
            ok = ok and run.status == expected and run.attestation.ok
            results[candidate] = run.result_digest
        checkpoint = book.checkpoint(log_key=workdir / "log.key")
        print(f"checkpoint: {checkpoint.size} entries, root {checkpoint.root}")

    with open_ledger(db, readonly=True) as book:
        for candidate, digest in results.items():
            chain = provenance(book, digest)
            print(f"\nprovenance of the {candidate} result: {'ok' if chain.ok else 'FAILED'}")
            for check in chain.checks:
                show(check, 1)
            ok = ok and chain.ok
        report = book.verify(log_key=created.log_verifier_key)
        print(f"\nverify: {report.entries} entries, {'clean' if report.ok else 'PROBLEMS'}")
        for finding in report.findings:
            print(f"  {finding.code}: {finding.message}")
    return ok and report.ok


def main(argv: list[str]) -> int:
    if len(argv) > 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if len(argv) >= 2:
            workdir = Path(argv[1])
            workdir.mkdir(parents=True, exist_ok=True)
            db = argv[2] if len(argv) == 3 else str(workdir / "ledger.db")
            return 0 if evaluate(workdir, db) else 1
        with tempfile.TemporaryDirectory() as tmp:
            return 0 if evaluate(Path(tmp), str(Path(tmp) / "ledger.db")) else 1
    except LedgerError as exc:  # every provledger error says what went wrong in one line
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
