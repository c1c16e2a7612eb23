"""Import a folder laid out like an IDKMesh repository into a ledger: history as it is.

Import records; it does not judge. Every file the folder holds is stored, whatever its
stage and whatever is missing around it: gates belong to what the ledger itself does
(freeze, burn, bind), and the audit reports what is wrong with what was recorded.

- JSON protocol objects (kind detected) are stored as themselves, cohorts at any stage
  included (no freeze gate).
- A JSON document that names a protocol kind but fails its schema (or names an
  unsupported schema version, or does not parse) is *quarantined*: its exact bytes are
  stored as a blob and a ``quarantine`` record links that blob to its path, the kind it
  claims, its id/version, its digests under both schemes and every problem. Audits find
  it by the digest a cohort records and report the schema violation, not a missing object.
- Other files (patches, logs, prose, JSON that is no protocol object) are blobs, so
  artifact digests resolve.
- Burn facts in a burned cohort's extensions become a burn notice carrying upstream's
  own burn date when its facts record one, and no date otherwise (never the import time).
- Standing: with the authority key, every frozen/burned cohort and every burn notice is
  appended together with the authority's attestation (admission requires it); without it
  (``--unsigned``) they are recorded as history without standing, which gates and
  audits never count. Authority-governed ledger records found in the folder
  (attestations, burn notices, bindings, identities, revocations) are never imported:
  signing them here would give them standing.

Accepted folders: a repository root (``benchmarks/``, ``examples/``,
``verification/fixtures/``), any folder below one of those inside a repository (a
``benchmarks/`` folder, a cohort folder such as ``benchmarks/phase-b2-first-five``,
``examples/``...), or a cohort folder / folder of cohort folders on its own. Paths are
recorded relative to the upstream repository root. Idempotent: a second run adds nothing.

Reads as the verifiers read a candidate root (``ledger.confined``): every file is opened
from a descriptor of FOLDER one path component at a time with ``O_NOFOLLOW``, so an entry
swapped for a symlink while the import runs is refused, never followed. Any entry that is
not a regular file or a directory inside the tree (a symlink, wherever it points; a FIFO,
socket or device) refuses the whole import with one ``InputError``, and every file is read
(each bounded by the document limit) before anything is written.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cohorts.burn import Reference, burn_facts_from_extensions, upstream_burn_date
from cohorts.lookup import BENCHMARK_COHORT, BURN_NOTICE
from cohorts.validation import schema_validator
from ledger.bounded import DOCUMENT_LIMIT, too_large
from ledger.confined import list_tree, read_in_root
from ledger.encoding.canonical import parse_strict
from ledger.encoding.digest import canonical_digest, legacy_digest, sha256_digest
from ledger.errors import InputError, KindError, LedgerError, NotFound
from ledger.files import shown
from ledger.log.history import history_markers
from ledger.schema.kinds import detect_kind, document, get_kind, schema_version_of
from ledger.store.base import AppendResult, Store
from ledger.store.prepared import Prepared, prepare_blob, prepare_json, prepare_value
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Signer
from verifiers.model import CohortView
from verifiers.model.json import as_int, as_str

QUARANTINE = "quarantine"
Status = Literal["imported", "present", "quarantined", "invalid"]
_NOT_HISTORY = frozenset(
    {"attestation", "burn-notice", "cohort-binding", "verifier-identity", "revocation"}
)
ROOTS = ("benchmarks", "examples", "verification/fixtures")


@dataclass(frozen=True)
class ImportItem:
    """What happened to one file (or to a burn notice derived from one)."""

    path: str
    status: Status
    reason: str
    kind: str | None = None
    digest: str | None = None
    new: bool = True

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "status": self.status,
            "new": self.new,
            "reason": self.reason,
            "kind": self.kind,
            "digest": self.digest,
        }


@dataclass(frozen=True)
class GroupSummary:
    """What one cohort folder (or other top folder) contributed."""

    folder: str
    cohort_id: str | None
    stage: str | None
    kinds: dict[str, int]
    quarantined: tuple[str, ...]
    invalid: int
    new: int
    burn_notice: str | None = None  # "attested", "unattested", "no burn facts", None

    def to_json(self) -> dict[str, object]:
        return {
            "folder": self.folder,
            "cohort_id": self.cohort_id,
            "stage": self.stage,
            "kinds": dict(sorted(self.kinds.items())),
            "quarantined": list(self.quarantined),
            "invalid": self.invalid,
            "new": self.new,
            "burn_notice": self.burn_notice,
        }

    def line(self) -> str:
        """One human line: ``folder: cohort (stage): 11 records (5 work-unit, ...)``."""
        total = sum(self.kinds.values())
        parts = ", ".join(f"{n} {k}" for k, n in sorted(self.kinds.items()))
        head = self.folder
        if self.cohort_id is not None:
            head += f": {self.cohort_id} ({self.stage})"
        text = f"{head}: {total} record(s)" + (f" ({parts})" if parts else "")
        text += f", {self.new} new"
        if self.quarantined:
            text += f", {len(self.quarantined)} quarantined"
        if self.invalid:
            text += f", {self.invalid} refused"
        if self.burn_notice is not None:
            text += f", burn notice {self.burn_notice}"
        return text


@dataclass(frozen=True)
class ImportReport:
    root: str
    prefix: str
    items: tuple[ImportItem, ...]
    cohort_ids: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        out = {"imported": 0, "present": 0, "quarantined": 0, "invalid": 0}
        for item in self.items:
            out[item.status] += 1
        return out

    def groups(self) -> list[GroupSummary]:
        """One summary per cohort folder, then per other top folder, in path order."""
        by_folder: dict[str, list[ImportItem]] = {}
        for item in self.items:
            by_folder.setdefault(group_of(item.path), []).append(item)
        out: list[GroupSummary] = []
        for folder, items in sorted(by_folder.items()):
            cohort_id, stage = self.cohort_ids.get(folder, (None, None))
            notice = next(
                (i for i in items if i.kind == BURN_NOTICE and i.path.endswith("#burn")), None
            )
            notice_state = None if notice is None else notice.reason
            out.append(
                GroupSummary(
                    folder,
                    cohort_id,
                    stage,
                    dict(
                        Counter(i.kind or "?" for i in items if i.status in ("imported", "present"))
                    ),
                    tuple(i.path for i in items if i.status == "quarantined"),
                    sum(1 for i in items if i.status == "invalid"),
                    sum(1 for i in items if i.new and i.status != "invalid"),
                    notice_state,
                )
            )
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "root": self.root,
            "prefix": self.prefix,
            "counts": self.counts(),
            "groups": [g.to_json() for g in self.groups()],
            "items": [i.to_json() for i in self.items],
        }


def group_of(path: str) -> str:
    """``benchmarks/<cohort>`` for cohort files, else the top folder(s) of ``path``."""
    parts = path.split("/")
    if parts[0] == "benchmarks" and len(parts) > 2:
        return "/".join(parts[:2])
    if parts[:2] == ["verification", "fixtures"]:
        return "verification/fixtures"
    return parts[0] if len(parts) > 1 else "."


# --- which files --------------------------------------------------------------------------


def _repo_root(folder: Path) -> Path | None:
    """The nearest ancestor (or ``folder``) that looks like an IDKMesh repository root."""
    for candidate in (folder, *folder.parents):
        if any((candidate / r).is_dir() for r in ROOTS):
            return candidate
    return None


def _has_cohort(folder: Path) -> bool:
    return (folder / "cohort.json").is_file() or any(
        (child / "cohort.json").is_file() for child in folder.iterdir() if child.is_dir()
    )


def locate(folder: Path) -> tuple[list[Path], str]:
    """The folders to walk and the upstream repository path of ``folder`` ("" = root).

    Raises ``NotFound`` / ``InputError`` saying exactly which folders are accepted.
    """
    if not folder.is_dir():
        raise NotFound(
            f"import folder not found, got {folder}, expected a directory (an IDKMesh"
            " repository root or a cohort folder such as benchmarks/phase-b2-first-five)"
        )
    real = folder.resolve()
    if any((real / r).is_dir() for r in ROOTS):
        return [folder / r for r in ROOTS if (folder / r).is_dir()], ""
    # A cohort folder (or a folder of them) is one wherever it lies: decided before any
    # ancestor is consulted, so an unrelated examples/ higher up cannot capture it.
    if _has_cohort(folder):
        if (folder / "cohort.json").is_file():
            return [folder], f"benchmarks/{real.name}"
        return [folder], "benchmarks"
    repo = _repo_root(real.parent)
    if repo is not None:
        rel = real.relative_to(repo)
        for r in ROOTS:
            top = repo / r
            if real.is_relative_to(top) or top.is_relative_to(real):
                walk = [folder] if real.is_relative_to(top) else [folder / top.relative_to(real)]
                return walk, rel.as_posix()
    where = (
        f" (inside the repository at {repo}, but {real.name}/ is not one of {', '.join(ROOTS)})"
        if repo is not None
        else ""
    )
    raise InputError(
        f"not an IDKMesh folder, got {folder}{where}, expected a repository root (with"
        " benchmarks/, examples/ or verification/fixtures/), a benchmarks/ folder, or a"
        " cohort folder holding cohort.json (e.g. benchmarks/phase-b2-first-five)"
    )


def _tree_files(walk: list[Path], root: Path) -> list[str]:
    """Every regular file under the walked folders, as POSIX paths relative to ``root``.

    Anything else on the way (a symlink, wherever it points; a FIFO, socket or device) is
    ``InputError``: the import is refused before anything is read.
    """
    found: list[str] = []
    for base in walk:
        base_rel = base.relative_to(root).as_posix()
        parts = [] if base_rel == "." else base_rel.split("/")
        for depth in range(1, len(parts) + 1):
            if os.path.islink(root.joinpath(*parts[:depth])):
                raise _not_in_tree(root, "/".join(parts[:depth]), "a symlink")
        listing = list_tree(base)
        for problem in listing.problems[:1]:
            for head, why in _LISTED:
                if problem.startswith(head):
                    raise _not_in_tree(root, "/".join([*parts, problem.removeprefix(head)]), why)
            raise InputError(
                f"import folder {shown(base)}, got {problem}, expected a readable tree"
            )
        found += ["/".join([*parts, rel]) for rel in listing.files]
    return sorted(set(found))


# How ``list_tree`` words what is not a regular file or a directory.
_LISTED = (
    ("symlink ", "a symlink"),
    ("not a regular file ", "not a regular file (a FIFO, socket or device)"),
)


def _not_in_tree(root: Path, rel: str, why: str) -> InputError:
    return InputError(
        f"import file {shown(rel)}, got {why}, expected a regular file inside {shown(root)}"
    )


_REFUSED = {
    "symlink": "a symlink",
    "not_regular": "not a regular file",
    "missing": "no file (it went away during the import)",
    "unsafe_locator": "an unsafe name",
    "unreadable": "an unreadable file",
}


def _read_tree(root: Path, rels: list[str]) -> dict[str, bytes]:
    """The bytes of every listed file, each read through ``ledger.confined``.

    Every file is opened from a descriptor of ``root`` one component at a time with
    ``O_NOFOLLOW``, so an entry swapped for a symlink after the listing is refused, never
    followed. Everything is read before anything is written: a refusal leaves the ledger
    as it was.
    """
    data: dict[str, bytes] = {}
    for rel in rels:
        seen = read_in_root(root, rel, max_bytes=DOCUMENT_LIMIT)
        if seen.status == "too_large":
            raise too_large("import file", shown(root / rel), f"{seen.size} bytes", DOCUMENT_LIMIT)
        if seen.data is None:
            why = _REFUSED.get(seen.status, seen.status)
            if seen.status != "missing":  # its detail speaks of a candidate root
                why += f": {seen.detail}"
            raise _not_in_tree(root, rel, why)
        data[rel] = seen.data
    return data


# --- one file -------------------------------------------------------------------------------


def _join(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel


def quarantine_record(
    path: str, raw: bytes, claimed_kind: str | None, problems: list[str]
) -> dict[str, Any]:  # a JSON record of mixed member types
    """The ``quarantine`` record for a document that is not a valid protocol object."""
    value: Any = None  # decoded bytes, maybe none
    document_digest: dict[str, str] | None = None
    try:
        value = parse_strict(raw)
        document_digest = {"legacy": legacy_digest(value), "jcs": canonical_digest(value)}
    except (LedgerError, ValueError, TypeError):
        value = None
    doc = value if isinstance(value, dict) else {}
    return {
        "provledger_kind": QUARANTINE,
        "schema_version": "0.1",
        "path": path,
        "blob_digest": sha256_digest(raw),
        "claimed_kind": claimed_kind,
        "claimed_schema_version": as_str(doc.get("schema_version")),
        "object_id": as_str(doc.get("id")),
        "object_version": as_int(doc.get("version")),
        "document_digest": document_digest,
        "problems": problems,
    }


def classify(
    path: str, raw: bytes, kind: str | None = None
) -> tuple[list[Prepared], Status, str, str]:
    """(objects to append, status, reason, kind shown) for one JSON file's bytes."""
    try:
        prepared = prepare_json(raw, kind)
        return [prepared], "imported", "appended", prepared.kind
    except LedgerError as exc:
        first = str(exc)
    try:
        value = parse_strict(raw)
    except LedgerError as exc:
        record = quarantine_record(path, raw, kind, [f"does not parse: {exc}"])
        return _quarantined(raw, record), "quarantined", record["problems"][0], QUARANTINE
    try:
        doc = document(value)
        spec = get_kind(kind) if kind is not None else detect_kind(doc)
    except KindError:
        # JSON that names no protocol kind (provenance notes, candidate files): kept as
        # bytes so any digest naming them resolves.
        return [prepare_blob(raw)], "imported", "not a protocol object, stored as bytes", "blob"
    problems: list[str]
    try:
        schema_version_of(spec, doc)
        problems = list(schema_validator(spec.name, doc)) or [first]
    except KindError as exc:
        problems = [str(exc)]
    record = quarantine_record(path, raw, spec.name, problems)
    reason = f"{spec.name} fails its schema: {'; '.join(problems)}"
    return _quarantined(raw, record), "quarantined", reason, QUARANTINE


def _quarantined(raw: bytes, record: dict[str, Any]) -> list[Prepared]:  # as quarantine_record
    return [prepare_blob(raw), prepare_value(record, QUARANTINE)]


# --- entry point ----------------------------------------------------------------------------


def import_idkmesh(store: Store, root: Path, authority: Signer | None = None) -> ImportReport:
    """Import every file under ``root``; see the module docstring.

    With ``authority`` (the ledger's authority key), each burn notice is appended together
    with the authority's attestation over it; signatures are deterministic, so a re-run
    rebuilds the same bytes and adds nothing.
    """
    walk, prefix = locate(root)
    items: list[ImportItem] = []
    cohorts: list[tuple[str, str]] = []
    pending: Pending = []
    data = _read_tree(root, _tree_files(walk, root))
    for local, raw in data.items():
        rel = _join(prefix, local)
        name = local.rpartition("/")[2]
        if name == "cohort.json":
            cohorts.append((rel, local))
            continue
        if not name.endswith(".json"):
            pending.append((rel, "imported", "appended", [prepare_blob(raw)]))
            continue
        objects, status, reason, _shown = classify(rel, raw)
        if status == "imported" and objects[-1].kind in _NOT_HISTORY:
            items.append(
                ImportItem(
                    rel, "invalid", f"{objects[-1].kind} is not upstream history",
                    objects[-1].kind, new=False,
                )
            )  # fmt: skip
            continue
        pending.append((rel, status, reason, objects))
    if not pending and not cohorts and not items:
        raise InputError(
            f"nothing to import, got no files under {root}, expected IDKMesh records"
            " (cohort.json, work-units/, evaluators/, evidence/)"
        )
    batch = _Batch(store, authority, prefix)
    items += _append(batch, pending)
    cohort_ids: dict[str, tuple[str | None, str | None]] = {}
    for rel, local in cohorts:
        prose = data.get(local.removesuffix("cohort.json") + "BURN_NOTICE.md")
        found, cohort_id, stage = _import_cohort(batch, rel, data[local], prose)
        items += found
        cohort_ids[group_of(rel)] = (cohort_id, stage)
    return ImportReport(
        str(root),
        prefix,
        tuple(sorted(items, key=lambda i: (i.path, i.kind or ""))),
        cohort_ids,
    )


Pending = list[tuple[str, Status, str, list[Prepared]]]


def _attestations(
    store: Store, objects: list[Prepared], authority: Signer | None
) -> list[Prepared]:
    """The authority's attestation over each object the store's admission policy governs
    (none unsigned). A wrong key is refused by admission, in the append."""
    from ledger.store.base import StoredObject

    if authority is None:
        return []
    policy = store.policy
    governed = [
        p
        for p in objects
        if policy.governed(
            StoredObject(p.digest, 0, p.kind, None, None, None, None, None, p.data), store
        )
        is not None
    ]
    return [attest_prepared(p, authority) for p in governed]


@dataclass(frozen=True)
class _Batch:
    """How every batch of one import is appended: signed or unsigned, and marked."""

    store: Store
    authority: Signer | None
    root: str

    def append(self, objects: list[Prepared]) -> list[AppendResult]:
        """Append ``objects`` plus the authority's attestations, led by the
        ``history-import`` marker naming the objects that are new (``ledger.log.history``;
        the attestations are the ledger's own, not history); the results line up with
        ``objects`` (the marker's are dropped)."""
        markers = history_markers(self.store, objects, "idkmesh", self.root)
        items = objects + _attestations(self.store, objects, self.authority)
        results = self.store.append_many(markers + items, history=self.authority is None)
        return results[len(markers) :]


def _append(batch: _Batch, pending: Pending) -> list[ImportItem]:
    flat = [p for _, _, _, objects in pending for p in objects]
    if not flat:
        return []
    # The attestations go last, so results line up with ``flat`` first.
    results = iter(batch.append(flat))
    out: list[ImportItem] = []
    for rel, status, reason, objects in pending:
        news = [next(results).new for _ in objects]
        main = objects[-1]  # the record: the object itself, or the quarantine record
        out.append(_item(rel, status, reason, main, news[-1]))
    return out


def _item(rel: str, status: Status, reason: str, prep: Prepared, new: bool) -> ImportItem:
    if status == "imported" and not new:
        status, reason = "present", "already in the ledger"
    return ImportItem(rel, status, reason, prep.kind, prep.digest, new)


def _import_cohort(
    batch: _Batch, rel: str, raw: bytes, prose: bytes | None
) -> tuple[list[ImportItem], str | None, str | None]:
    objects, status, reason, _shown = classify(rel, raw, BENCHMARK_COHORT)
    try:
        value: Any = parse_strict(raw)  # decoded bytes, read member by member
    except LedgerError:
        value = None
    cohort = value if isinstance(value, dict) else {}
    try:
        results = batch.append(objects)
    except LedgerError as exc:
        return [ImportItem(rel, "invalid", str(exc), BENCHMARK_COHORT, new=False)], None, None
    out = [_item(rel, status, reason, objects[-1], results[-1].new)]
    stage = as_str(CohortView.of(cohort).stage)
    if stage == "burned" and status == "imported":
        notice = _burn_notice(batch, rel, prose, cohort)
        if notice is not None:
            out.append(notice)
    return out, as_str(cohort.get("id")), stage


def _burn_notice(
    batch: _Batch,
    rel: str,
    prose: bytes | None,
    cohort: dict[str, Any],  # decoded bytes
) -> ImportItem | None:
    where = f"{rel}#burn"
    try:
        facts = burn_facts_from_extensions(cohort)
    except LedgerError as exc:
        return ImportItem(where, "invalid", str(exc), BURN_NOTICE, new=False)
    if facts is None:
        # Nothing upstream to record; the audit reports the burned cohort's missing notice.
        return None
    refs: list[Reference] = []
    if prose is not None:
        refs.append(
            Reference(
                "notice", "document", "BURN_NOTICE.md", sha256_digest(prose), facts.repository
            )
        )
    try:
        prepared = prepare_value(
            facts.to_notice(issued_at=upstream_burn_date(facts), references=refs), BURN_NOTICE
        )
        result = batch.append([prepared])[0]
    except LedgerError as exc:
        return ImportItem(where, "invalid", str(exc), BURN_NOTICE, new=False)
    state = "attested" if batch.authority is not None else "unattested"
    status: Status = "imported" if result.new else "present"
    return ImportItem(where, status, state, BURN_NOTICE, prepared.digest, result.new)
