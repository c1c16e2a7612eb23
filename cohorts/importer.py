"""Import a folder laid out like an IDKMesh repository into a ledger.

Read: ``benchmarks/*/`` (``cohort.json``, ``work-units/``, ``evaluators/``,
``evidence/``, other files), ``examples/`` and ``verification/fixtures/``. JSON files
are protocol objects (kind detected, schema-validated); other files are blobs (patches,
logs, prose notices) so artifact digests resolve. Order: every non-cohort object first,
then cohorts, so a cohort's references (named by path or by legacy digest) are already
stored when its gate runs. Cohorts at ``frozen``/``burned`` go through the freeze gate
(a burned cohort is gated as the frozen document it was); other stages are appended as
plain objects. Burn facts in a burned cohort's extensions become a burn-notice object
(``issued_at`` = when the ledger recorded the burned cohort, so re-runs rebuild the same
bytes). Symlinks that leave PATH are refused. Idempotent: a second run adds nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cohorts.burn import Reference, burn_facts_from_extensions
from cohorts.errors import GateError
from cohorts.lifecycle import require_freezable
from cohorts.lookup import BENCHMARK_COHORT, BURN_NOTICE
from cohorts.service import check_authority
from cohorts.store_lookup import StoreLookup
from cohorts.validation import schema_validator
from ledger.encoding.canonical import parse_strict
from ledger.encoding.digest import sha256_digest
from ledger.errors import KindError, LedgerError
from ledger.store.base import Store
from ledger.store.prepared import Prepared, prepare_blob, prepare_json, prepare_value
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Signer

Status = Literal["imported", "skipped", "invalid"]
ROOTS = ("benchmarks", "examples", "verification/fixtures")


@dataclass(frozen=True)
class ImportItem:
    path: str
    status: Status
    reason: str
    kind: str | None = None
    digest: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "reason": self.reason,
            "kind": self.kind,
            "digest": self.digest,
        }


@dataclass(frozen=True)
class ImportReport:
    items: tuple[ImportItem, ...]

    def counts(self) -> dict[str, int]:
        out = {"imported": 0, "skipped": 0, "invalid": 0}
        for item in self.items:
            out[item.status] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts(), "items": [i.to_json() for i in self.items]}


def _files(root: Path) -> Iterator[tuple[Path, str | None]]:
    """(file, refusal) under the import roots, sorted; refusal names an escaping link."""
    real_root = root.resolve()
    for sub in ROOTS:
        base = root / sub
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            # Resolve every path, not only links: a symlinked directory on the way (or the
            # sub-root itself) would otherwise lead the walk out of PATH.
            target = path.resolve()
            if not target.is_relative_to(real_root):
                if path.is_file() or path.is_symlink():
                    yield (
                        path,
                        f"symlink leaves PATH, got {target}, expected a target under {real_root}",
                    )
                continue
            if path.is_file():
                yield path, None


def import_idkmesh(store: Store, root: Path, authority: Signer | None = None) -> ImportReport:
    """Import every object under ``root``; see the module docstring.

    With ``authority`` (the ledger's authority key), each burn notice is appended together
    with the authority's attestation over it; signatures are deterministic, so a re-run
    rebuilds the same bytes and adds nothing.
    """
    from ledger.errors import NotFound

    if not root.is_dir():
        raise NotFound(f"import folder not found, got {root}, expected a directory")
    items: list[ImportItem] = []
    cohorts: list[tuple[str, Path]] = []
    pending: list[tuple[str, Prepared]] = []
    for path, refusal in _files(root):
        rel = path.relative_to(root).as_posix()
        if refusal is not None:
            items.append(ImportItem(rel, "invalid", refusal))
            continue
        if path.name == "cohort.json":
            cohorts.append((rel, path))
            continue
        data = path.read_bytes()
        if path.suffix != ".json":
            pending.append((rel, prepare_blob(data)))
            continue
        try:
            pending.append((rel, prepare_json(data)))
        except KindError as exc:
            items.append(ImportItem(rel, "skipped", f"not a protocol object: {exc}"))
        except LedgerError as exc:
            items.append(ImportItem(rel, "invalid", str(exc)))
    if pending:
        results = store.append_many([p for _, p in pending])
        for (rel, prep), res in zip(pending, results, strict=True):
            items.append(_done(rel, prep, res.new))
    for rel, path in cohorts:
        items += _import_cohort(store, rel, path, authority)
    return ImportReport(tuple(sorted(items, key=lambda i: (i.path, i.kind or ""))))


def _done(rel: str, prep: Prepared, new: bool) -> ImportItem:
    return ImportItem(
        rel,
        "imported" if new else "skipped",
        "appended" if new else "already in the ledger",
        prep.kind,
        prep.digest,
    )


def _import_cohort(
    store: Store, rel: str, path: Path, authority: Signer | None
) -> list[ImportItem]:
    raw = path.read_bytes()
    try:
        value = parse_strict(raw)
        prepared = prepare_json(raw, BENCHMARK_COHORT)
    except LedgerError as exc:
        return [ImportItem(rel, "invalid", str(exc), BENCHMARK_COHORT)]
    stage = value.get("stage") if isinstance(value, dict) else None
    if stage in ("frozen", "burned"):
        gated = copy.deepcopy(value)
        gated["stage"] = "frozen"

        def precheck(reader: Any) -> None:
            require_freezable(gated, StoreLookup(reader), schema_validator)

        try:
            precheck(store)
            results = store.append_many([prepared], precheck=precheck)
        except GateError as exc:
            codes = "; ".join(f"{f.code}{f' [{f.task}]' if f.task else ''}" for f in exc.failures)
            return [ImportItem(rel, "invalid", f"freeze gate refused: {codes}", BENCHMARK_COHORT)]
        except LedgerError as exc:
            return [ImportItem(rel, "invalid", str(exc), BENCHMARK_COHORT)]
    else:
        try:
            results = store.append_many([prepared])
        except LedgerError as exc:
            return [ImportItem(rel, "invalid", str(exc), BENCHMARK_COHORT)]
    out = [_done(rel, prepared, results[0].new)]
    if stage == "burned":
        out.append(_burn_notice(store, rel, path, value, results[0].entry.appended_at, authority))
    return out


def _burn_notice(
    store: Store,
    rel: str,
    path: Path,
    cohort: dict[str, Any],
    issued_at: str,
    authority: Signer | None,
) -> ImportItem:
    where = f"{rel}#burn"
    try:
        facts = burn_facts_from_extensions(cohort)
    except LedgerError as exc:
        return ImportItem(where, "invalid", str(exc), BURN_NOTICE)
    if facts is None:
        return ImportItem(where, "skipped", "burned cohort records no burn facts", BURN_NOTICE)
    refs: list[Reference] = []
    prose = path.parent / "BURN_NOTICE.md"
    if prose.is_file() and not prose.is_symlink():
        refs.append(
            Reference(
                "notice",
                "document",
                prose.name,
                sha256_digest(prose.read_bytes()),
                facts.repository,
            )
        )
    try:
        prepared = prepare_value(
            facts.to_notice(issued_at=_rfc3339(issued_at), references=refs), BURN_NOTICE
        )
        batch = [prepared]
        if authority is not None:
            check_authority(store, authority)
            batch.append(attest_prepared(prepared, authority))
        result = store.append_many(batch)[0]
    except LedgerError as exc:
        return ImportItem(where, "invalid", str(exc), BURN_NOTICE)
    return _done(where, prepared, result.new)


def _rfc3339(stamp: str) -> str:
    text = stamp.replace(" ", "T")
    return text if text.endswith("Z") or "+" in text[10:] else text + "Z"
