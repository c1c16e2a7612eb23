"""The CPU floor of verify, import and index: what their required checks alone cost per object.

``provledger verify`` must, for every entry, read its row, hash the stored bytes, show
they are their own RFC 8785 form (which parses them), check the kind's schema, verify
each attestation's Ed25519 signature, and hash the entry into the tree.
``provledger import jsonl`` must parse each line, write its canonical bytes, hash them
(and the legacy form), check the schema and verify attestation signatures, and then
write the rows. This script times each of those steps alone, in one process, over a
sample of a real ledger (and of the JSONL it was imported from), with the same
functions the commands use. Their sum is a lower bound on the CPU per object: the
commands add the audit's bookkeeping and the worker processes' plumbing. ``verify``'s
floor also counts the legacy digests it recomputes from float hints, the admission
replay (every entry re-judged by the admission policy as of its position,
``ledger.audit.replay``; the signatures it checks are the Ed25519 step's) and SQLite's
``integrity_check`` of the whole file (its share per entry). Left out, so the bound
stays a bound: the references, index columns, tree nodes and totals both commands
compare or derive, and the import's legacy digests (inside its parse step's encoder).

The import's floor also counts SQLite's own writes of the rows (inserts and commits),
measured store-only over a ledger grown to the same size (``scripts/bench_store.py``,
``store_only=`` here): that work is serial, one writer per ledger, so besides
``cores / floor`` the import can go no faster than one object per store wall time
(its commits wait for the disk). ``ceiling`` is the lower of the two.

``provledger index`` must, for every entry, read its row and show that the browse rows
it writes are re-derived from the stored bytes: their hash, the parse (canonical: the
browse shows canonical JSON), the kind and index columns, the legacy digest from the
float hints, the attestations' signatures, the pretty text and the rows read from the
document; then write the rows (``index_floor`` says what it counts and leaves out). Its
SQLite writes are serial too (one writer per browse file): its ``ceiling`` is the lower
of ``cores / floor`` and one entry per write time.

A rate target R on C cores needs at most C / R seconds of CPU per object, so the
floor bounds the rate any design of the same steps in Python can reach:
``ceiling = cores / floor`` (for the import, at most ``1 / store wall`` as well).

    .venv/bin/python scripts/bench_floor.py --db LEDGER [--corpus JSONL] [--index]
        [--sample 20000]

``scripts/bench.py`` runs it on every ledger it builds.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ledger.audit.object_check import hinted_legacy_digest
from ledger.encoding.canonical import canonical_value, encode
from ledger.encoding.digest import sha256_digest
from ledger.log import merkle
from ledger.log.leaf import entry_record
from ledger.schema import validation as schema
from ledger.schema.kinds import BLOB, detect_kind
from ledger.store.base import stored_run, unchecked_object
from ledger.store.sqlite import open_store
from ledger.trust.attestation import parse_attestation
from ledger.trust.dsse import pae
from ledger.trust.identity import trust_index
from ledger.trust.keys import verify
from ledger.trust.presign import RecentSubjects, signing_keys
from ledger.workers import usable_cpus

VERIFY_TARGET = 20_000  # entries/s, issue 17
IMPORT_TARGET = 10_000  # objects/s, issue 17
INDEX_TARGET = 20_000  # entries/s, issue 29 (index from scratch)
Row = tuple[int, str, str, str, bytes]  # seq, kind, digest, appended_at, stored bytes


def _cpu(step: Callable[[], object]) -> float:
    """CPU seconds of one call of ``step`` (the best of three: the least disturbed)."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        step()
        best = min(best, time.process_time() - start)
    return best


def _cpu_once(step: Callable[[], object]) -> float:
    """CPU seconds of one call of ``step`` (for the long whole-file steps)."""
    start = time.process_time()
    step()
    return time.process_time() - start


def _each(fn: Callable[[Any], object], items: Iterable[Any]) -> Callable[[], None]:
    def run() -> None:
        for item in items:
            fn(item)

    return run


def _signatures(rows: list[Row], keys: dict[str, bytes]) -> list[Any]:
    """(key, message, signature) of each attestation whose subject comes before it in
    ``rows``, paired as the commands' workers pair them (``RecentSubjects``)."""
    recent = RecentSubjects(len(rows) + 1)  # every earlier row is a candidate subject
    out = []
    for _seq, kind, digest, _at, blob in rows:
        pair = recent.see(kind, digest, blob)
        if pair is None:
            continue
        detached = parse_attestation(pair[0])
        key = keys.get(detached.signature.keyid)
        if key is not None:
            out.append((key, pae(detached.payload_type, pair[1]), detached.signature.sig))
    return out


def _read_cpu(store: Any, sample: int) -> float:
    """CPU seconds of reading the first ``sample`` log rows, as the commands read them."""

    def read() -> None:
        for _row in itertools.islice(store.log_rows(since=0), sample):
            pass

    return _cpu(read)


def _legacy(item: tuple[bytes, tuple[bool, Any], str]) -> None:
    """The legacy digest of a hinted object: (bytes, their ``canonical_value``, hints)."""
    data, (shown, value), text = item
    hinted_legacy_digest(data, value if shown else encode(data).value, shown, text)


def _checked(value: Any) -> bool:
    spec = detect_kind(value)
    return schema.is_valid(spec.name, value.get("schema_version"), value)


def _canonical(data: bytes) -> object:
    shown, value = canonical_value(data)
    return value if shown else encode(data).value


def _tree(rows: list[Row]) -> Callable[[], None]:
    def run() -> None:
        frontier = merkle.CompactRange()
        for seq, kind, digest, at, _data in rows:
            frontier.append(merkle.leaf_hash(entry_record(seq, kind, digest, at)))

    return run


def _replay(store: Any, objects: list[Any], signs: list[Any]) -> Callable[[], None]:
    """``verify``'s admission replay over ``objects`` (in log order), reading through the
    audit's memory of recently checked objects, with every signature's verdict known
    ahead (as the audit's workers provide them): the Ed25519 step times those."""
    from ledger.audit.full import _Recent
    from ledger.audit.replay import AdmissionReplay

    verdicts = [(key, hashlib.sha256(message).digest(), sig) for key, message, sig in signs]

    def run() -> None:
        replay = AdmissionReplay(store.policy)
        for key, digest, sig in verdicts:
            replay.memo.add(key, digest, sig, True)
        reader = _Recent(store)
        replay.begin(reader, 0)
        for obj in objects:
            replay(obj, reader)
            reader.keep(obj)
        replay.finish(reader)

    return run


def verify_floor(db: Path, sample: int) -> dict[str, Any]:
    """Per-entry CPU (microseconds) of each step ``verify`` cannot skip, on the first
    ``sample`` entries of ``db``."""
    with open_store(db, readonly=True) as store, store.audit_session():
        keys = signing_keys(trust_index(store))
        read_s = _read_cpu(store, sample)
        # SQLite's own check of the whole file (pages, and every index against its
        # table): verify runs it beside the pass; per entry here.
        integrity_s = _cpu_once(lambda: store.storage_findings(whole=True))
        size = store.size()
        rows: list[Row] = []
        hints: dict[int, str] = {}  # seq -> the stored float hints
        stored_objects = []
        for r in itertools.islice(store.log_rows(since=0), sample):
            obj = r.object
            if obj is None or not isinstance(obj.data, bytes):
                continue
            seq = int(str(r.seq))
            rows.append((seq, str(r.kind), str(r.digest), str(r.appended_at), obj.data))
            stored_objects.append(unchecked_object(obj))
            if isinstance(obj.legacy_hints, str):
                hints[seq] = obj.legacy_hints
        signs = _signatures(rows, keys)
        replay_s = _cpu(_replay(store, [store.get_by_seq(seq) for seq, *_ in rows], signs))
        stored_s = _stored_side(store, stored_objects, rows)
    n = len(rows)
    docs = [data for _s, kind, _d, _a, data in rows if kind != BLOB]
    values = [_canonical(data) for data in docs]
    hinted = [
        (data, canonical_value(data), hints[seq]) for seq, _k, _d, _a, data in rows if seq in hints
    ]

    steps = {
        "read the row": read_s,
        "SHA-256 of the stored bytes": _cpu(_each(lambda d: hashlib.sha256(d).hexdigest(), docs)),
        "parse, and show the bytes canonical": _cpu(_each(_canonical, docs)),
        "kind and schema": _cpu(_each(_checked, values)),
        "Ed25519 signatures": _cpu(_each(lambda s: verify(*s), signs)),
        "legacy digests from the float hints": _cpu(_each(_legacy, hinted)),
        "admission replay (signatures: the Ed25519 step)": replay_s,
        "leaf hash and tree": _cpu(_tree(rows)),
    }
    # A whole-file cost, taken per entry of the whole ledger (scaled to the sample).
    steps["SQLite integrity_check, per entry"] = integrity_s * n / max(size, 1)
    report = _report(steps, n, VERIFY_TARGET, {"attestations": len(signs), "hinted": len(hinted)})
    # Reported apart, never in the floor above: the comparisons with what the store keeps
    # beside the bytes, which verify must also make (the floor leaves them out).
    side = {name: seconds / n * 1e6 for name, seconds in stored_s.items()}
    with_side = report["floor_us"] + sum(side.values())
    report["stored_side_us"] = side
    report["floor_with_stored_side_us"] = with_side
    report["ceiling_with_stored_side_per_s"] = report["cores"] * 1e6 / with_side
    return report


def _stored_side(store: Any, objects: list[Any], rows: list[Row]) -> dict[str, float]:
    """CPU seconds of each comparison of a re-derived value with the one the store keeps
    beside the bytes, over ``objects`` (their entries: ``rows``), through the audit's own
    readers: references (``ref_scan``), index columns, stored tree nodes (one range read
    per level per run of 256, as ``_AuditRun._grown``), per-kind totals."""
    from ledger.audit.entry_check import run_totals

    values: list[tuple[Any, Any]] = [(o, _canonical(o.data)) for o in objects if o.kind != BLOB]
    specs = [(o, value, detect_kind(value)) for o, value in values]

    def refs() -> None:
        scan = store.ref_scan()
        for o, value, spec in specs:
            for rel, target in spec.refs(value):
                scan.has(o.digest, rel, target)

    def columns() -> None:
        for o, value, spec in specs:
            got = (value.get("schema_version"), spec.object_id(value), spec.object_version(value))
            _same = got == (o.schema_version, o.object_id, o.object_version)

    # The nodes each run closes (hashing them is the floor's tree step): only the reads
    # and comparisons are timed.
    leaves = [merkle.leaf_hash(entry_record(seq, k, d, at)) for seq, k, d, at, _data in rows]
    frontier = merkle.CompactRange()
    closed = [frontier.extend(b"".join(leaves[at : at + 256])) for at in range(0, len(leaves), 256)]

    def nodes() -> None:
        scan = store.node_scan()
        for run in closed:
            for level, (first, joined) in enumerate(run):
                got = stored_run(scan, level, first, first + len(joined) // 32)
                _same = got is not None and b"".join(got) == joined

    entry_rows = [
        (seq, d, k, at, o) for (seq, k, d, at, _data), o in zip(rows, objects, strict=True)
    ]

    return {
        "references re-derived and compared with the stored rows": _cpu(refs),
        "index columns compared with the stored ones": _cpu(columns),
        "stored tree nodes compared (a range read per level)": _cpu(nodes),
        "per-kind totals re-derived": _cpu(lambda: run_totals(entry_rows)),
    }


STORE_STEP = "SQLite writes of the rows (store-only, serial)"
WRITE_STEP = "SQLite writes of the browse rows (serial)"


def _projections(store: Any, sample: int) -> list[Any]:
    """The browse rows of the first ``sample`` entries, as ``index`` projects them (in
    this process: the same checks and rows a pool would give)."""
    from cohorts.browse.build import checked_objects, tree_node_rows
    from cohorts.browse.project import Projector

    projector = Projector(store)
    nodes = store.node_scan()
    out = []
    for obj, appended_at, built in checked_objects(store, 0, sample, workers=1):
        projection = projector.rows(obj, appended_at, built)
        projection.tuples += [("tree_nodes", node) for node in tree_node_rows(nodes, obj.seq)]
        out.append(projection)
    return out


def _browse_writes(projections: list[Any]) -> tuple[float, float]:
    """CPU seconds of ``index``'s own SQLite work for ``projections`` in a fresh browse
    file set up as a full build sets it up: the batched inserts (``_Writer``), and the
    lookup and full-text indexes built once after them (``finish_bulk``)."""
    import tempfile

    import sqlite_utils

    from cohorts.browse.build import _Writer, ensure_schema, finish_bulk, scratch_settings

    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite_utils.Database(Path(tmp) / "browse.db")
        try:
            scratch_settings(db)
            db.conn.execute("BEGIN")
            ensure_schema(db, bulk=True)
            writer = _Writer(db)
            start = time.process_time()
            for projection in projections:
                writer.add(projection)
            writer.flush()
            inserts = time.process_time() - start
            start = time.process_time()
            finish_bulk(db)
            indexes = time.process_time() - start
            db.conn.execute("COMMIT")
        finally:
            db.close()
    return inserts, indexes


def index_floor(db: Path, sample: int) -> dict[str, Any]:
    """Per-entry CPU (microseconds) of each step ``index`` cannot skip, on the first
    ``sample`` entries of ``db``, given its rule: the browse database shows nothing it
    has not re-derived from the bytes.

    Counted: reading the row; the SHA-256 of the stored bytes (the rows are of these
    bytes); the parse that also shows them canonical (the objects table shows them as
    canonical JSON); the kind and index columns from the document; the legacy digests
    from the float hints (the objects table shows them); the attestations' Ed25519
    signatures (``signature_valid``); the pretty text and the rows read from the
    document alone (``prebuild``); and SQLite's writes of every row, with the indexes
    built after them. The writes are serial (one writer per file): besides
    ``cores / floor`` the index can go no faster than one entry per write time.

    Not counted, so the bound stays a bound (``not_counted_us``, measured): the schema
    check ``index`` repeats from ``verify`` (the browse shows no schema verdict), the
    leaf hashes and tree (the browse copies the ledger's tree nodes; a proof served
    from them is checked against a signed checkpoint), the attestations' rows beyond
    their signatures, the cohort rows and audits (none in the benchmark's corpus), and
    the pool's plumbing."""
    from cohorts.browse.project import prebuild
    from ledger.schema.kinds import detect_kind as kind_of

    with open_store(db, readonly=True) as store, store.audit_session():
        keys = signing_keys(trust_index(store))
        read_s = _read_cpu(store, sample)
        objects = [
            unchecked_object(r.object)
            for r in itertools.islice(store.log_rows(since=0), sample)
            if r.object is not None
        ]
        projections = _projections(store, min(sample, store.size()))
    rows: list[Row] = [(o.seq, o.kind, o.digest, "", o.data) for o in objects]
    signs = _signatures(rows, keys)
    docs = [o for o in objects if o.kind != BLOB]
    parsed = [(o, _canonical(o.data)) for o in docs]
    hinted = [(o.data, canonical_value(o.data), o.legacy_hints) for o in docs if o.legacy_hints]

    def columns(item: tuple[Any, Any]) -> None:
        spec = kind_of(item[1])
        (spec.name, item[1].get("schema_version"), spec.object_id(item[1]))
        spec.object_version(item[1])

    inserts = indexes = float("inf")
    for _ in range(3):  # the least disturbed of three fresh files
        ins, idx = _browse_writes(projections)
        inserts, indexes = min(inserts, ins), min(indexes, idx)
    steps = {
        "read the row": read_s,
        "SHA-256 of the stored bytes": _cpu(
            _each(lambda o: hashlib.sha256(o.data).hexdigest(), objects)
        ),
        "parse, and show the bytes canonical": _cpu(_each(lambda o: _canonical(o.data), docs)),
        "kind and index columns": _cpu(_each(columns, parsed)),
        "legacy digests from the float hints": _cpu(_each(_legacy, hinted)),
        "Ed25519 signatures": _cpu(_each(lambda s: verify(*s), signs)),
        "pretty text and rows from the document (prebuild)": _cpu(
            _each(lambda item: prebuild(*item), parsed)
        ),
        WRITE_STEP: inserts + indexes,
    }
    n = len(objects)
    not_counted = {
        "kind and schema (verify's check, repeated by index)": _cpu(
            _each(_checked, [value for _o, value in parsed])
        ),
        "leaf hash and tree (copied from the ledger, not re-derived)": _cpu(
            _tree([(o.seq, o.kind, o.digest, "", o.data) for o in objects])
        ),
    }
    extra = {
        "attestations": len(signs),
        "hinted": len(hinted),
        "write_us": (inserts + indexes) / n * 1e6,
        "write_indexes_us": indexes / n * 1e6,
        "not_counted_us": {name: s / n * 1e6 for name, s in not_counted.items()},
    }
    report = _report(steps, n, INDEX_TARGET, extra)
    # The serial bound: one process writes the browse file.
    serial = 1e6 / report["write_us"]
    report["serial_ceiling_per_s"] = serial
    report["cpu_ceiling_per_s"] = report["ceiling_per_s"]
    report["bound"] = "serial writes" if serial < report["ceiling_per_s"] else "cpu"
    report["ceiling_per_s"] = min(serial, report["ceiling_per_s"])
    return report


def import_floor(
    corpus: Path, db: Path, sample: int, store_only: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Per-object CPU (microseconds) of each check ``import jsonl`` cannot skip, on the
    first ``sample`` lines of ``corpus`` (imported into ``db``, whose keys sign them).

    ``store_only``: a ``scripts/bench_store.py`` result for a ledger of the import's size;
    its SQLite share joins the floor as a serial step (see the module docstring)."""
    with corpus.open("rb") as f:
        lines = [line for line in itertools.islice(f, sample) if line.strip()]
    encoded = [encode(line) for line in lines]
    with open_store(db, readonly=True) as store, store.audit_session():
        keys = signing_keys(trust_index(store))
    rows: list[Row] = [
        (i, str(e.value.get("provledger_kind")), sha256_digest(e.canonical), "", e.canonical)
        for i, e in enumerate(encoded)
    ]
    signs = _signatures(rows, keys)

    def digests(e: Any) -> None:
        hashlib.sha256(e.canonical).hexdigest()
        hashlib.sha256(e.legacy).hexdigest()

    steps = {
        "parse, write canonical and legacy bytes": _cpu(_each(encode, lines)),
        "SHA-256 of both forms": _cpu(_each(digests, encoded)),
        "kind and schema": _cpu(_each(_checked, [e.value for e in encoded])),
        "Ed25519 signatures": _cpu(_each(lambda s: verify(*s), signs)),
    }
    n = len(lines)
    if store_only is None:
        return _report(steps, n, IMPORT_TARGET, {"attestations": len(signs)})
    # Per object already: scaled to the sample so that ``_report`` divides it back.
    steps[STORE_STEP] = store_only["sqlite_cpu_us"] * n / 1e6
    extra = {
        "attestations": len(signs),
        "checks_us": sum(steps.values()) / n * 1e6 - store_only["sqlite_cpu_us"],
        "store_objects": store_only["objects"],
        "store_cpu_us": store_only["sqlite_cpu_us"],
        "store_wall_us": store_only["sqlite_wall_us"],
        "store_last_over_first": store_only["last_over_first"],
    }
    report = _report(steps, n, IMPORT_TARGET, extra)
    # The serial bound: one writer, one batch's rows and commit at a time.
    serial = 1e6 / max(store_only["sqlite_wall_us"], store_only["sqlite_cpu_us"])
    report["serial_ceiling_per_s"] = serial
    report["cpu_ceiling_per_s"] = report["ceiling_per_s"]
    report["bound"] = "serial store" if serial < report["ceiling_per_s"] else "cpu"
    report["ceiling_per_s"] = min(serial, report["ceiling_per_s"])
    return report


def _report(steps: dict[str, float], n: int, target: int, extra: dict[str, Any]) -> dict[str, Any]:
    per = {name: seconds / n * 1e6 for name, seconds in steps.items()}
    floor = sum(per.values())
    cores = usable_cpus()
    return {
        "objects": n,
        **extra,
        "us_per_object": per,
        "floor_us": floor,
        "cores": cores,
        "ceiling_per_s": cores * 1e6 / floor,
        "target_per_s": target,
        "budget_us": cores * 1e6 / target,
    }


def table(name: str, report: dict[str, Any]) -> str:
    lines = [f"{name}: {report['objects']:,} objects ({report['attestations']:,} attestations)"]
    for step, us in report["us_per_object"].items():
        lines.append(f"  {step:<50}{us:8.1f} us")
    lines.append(f"  {'floor (sum)':<50}{report['floor_us']:8.1f} us")
    lines.append(
        f"  budget for {report['target_per_s']:,}/s on {report['cores']} cores:"
        f" {report['budget_us']:.0f} us; ceiling at the floor: {report['ceiling_per_s']:,.0f}/s"
    )
    if "stored_side_us" in report:
        for step, us in report["stored_side_us"].items():
            lines.append(f"  apart, not in the floor: {step}: {us:.1f} us")
        lines.append(
            f"  floor incl. stored side values (apart): {report['floor_with_stored_side_us']:.1f}"
            f" us; its ceiling: {report['ceiling_with_stored_side_per_s']:,.0f}/s"
        )
    if "write_us" in report:
        lines.append(
            f"  writes {report['write_us']:.1f} us/entry (serial, indexes"
            f" {report['write_indexes_us']:.1f}): at most {report['serial_ceiling_per_s']:,.0f}/s;"
            f" bound: {report['bound']}"
        )
        for step, us in report["not_counted_us"].items():
            lines.append(f"  not counted: {step}: {us:.1f} us")
    elif "serial_ceiling_per_s" in report:
        lines.append(
            f"  store wall {report['store_wall_us']:.1f} us/object (serial):"
            f" at most {report['serial_ceiling_per_s']:,.0f}/s; bound: {report['bound']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="a ledger (read only)")
    ap.add_argument("--corpus", type=Path, help="the JSONL it was imported from")
    ap.add_argument("--sample", type=int, default=20_000)
    ap.add_argument(
        "--store",
        type=Path,
        help="a scripts/bench_store.py --out JSON (a ledger of the import's size):"
        " the import floor adds its SQLite writes",
    )
    ap.add_argument("--index", action="store_true", help="also the floor of `index`")
    ap.add_argument("--out", type=Path, help="write the JSON results here")
    args = ap.parse_args(argv)
    result: dict[str, Any] = {"verify": verify_floor(args.db, args.sample)}
    if args.index:
        result["index"] = index_floor(args.db, args.sample)
    if args.corpus is not None:
        store = json.loads(args.store.read_text()) if args.store is not None else None
        result["import"] = import_floor(args.corpus, args.db, args.sample, store)
    for name, report in result.items():
        print(table(name, report))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
