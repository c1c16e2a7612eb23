"""Running the per-entry checks over the audit's rows, optionally in worker processes.

``with_object_checks`` yields ``(row, check_object result)`` in row order (``index``),
``with_entry_checks`` runs of rows with everything ``verify`` checks per entry without
reading another one (``ledger.audit.entry_check.check_chunk``: leaf hashes, column and
object checks, totals). Both keep a bounded window of chunks in flight; below
``POOL_THRESHOLD`` entries they run in process. With a pool, the parent checks chunks
too whenever the workers are behind.

With ``presign`` the workers (and the parent, for the chunks it checks) also verify
attestation signatures ahead of the audit:
for an attestation whose subject was read shortly before (the usual case: a subject is
attested right after it is appended), the worker checks the Ed25519 signature over
the DSSE PAE of the subject's stored bytes with the key its key id names, and the
verdict goes to a ``SignatureMemo``. The audit's own judgement then finds it there;
anything not computed ahead (or computed for other bytes) it verifies itself.
"""

from __future__ import annotations

import functools
import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ledger.audit.entry_check import (
    ChunkCheck,
    Columns,
    EntryRow,
    check_chunk,
    check_columns,
    unchecked_row,
)
from ledger.audit.object_check import CheckResult, check_object, check_parsed
from ledger.collection import fewer_collections
from ledger.store.base import RawLogRow, RawObjectRow, StoredObject
from ledger.trust.presign import Presign, Presigned, RecentSubjects, presign_read
from ledger.workers import Pool, usable_cpus

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject

__all__ = [
    "POOL_THRESHOLD",
    "Derive",
    "Presign",
    "default_workers",
    "with_derived_checks",
    "with_entry_checks",
    "with_object_checks",
]

W = TypeVar("W")  # a chunk's rows as sent to the check
R = TypeVar("R")  # a chunk's result

# Below this many entries a worker pool costs more than it saves.
POOL_THRESHOLD = 20_000
_CHUNK = 256  # rows per task sent to a worker
# Pool tasks pending per worker before the parent checks a chunk itself. While the
# parent checks a chunk and then audits the rows of those before it (tens of ms),
# the worker lives on what is queued: with 2 per worker it ran dry (worker ~62% busy
# at 100k on 2 cores); with 6 both stay busy (10-20% less wall time, docs/PERFORMANCE.md),
# at ~1.2 MB of rows per queued chunk.
_AHEAD = 6
_RECENT = 4096  # objects kept in the parent to pair an attestation with its subject
# Allocations (net) between passes of the youngest generation during a pooled pass: more
# than the containers a full window holds (~20,000), so most are freed before a pass
# examines them (at the default 700, ~5.5 us of the parent's CPU per entry at 200k).
_COLLECT_EVERY = 200_000
_KEYS: dict[str, bytes] = {}  # in a worker: the raw signing key of each key id
#: A chunk's pending result: a pool ``AsyncResult`` (which multiprocessing types as Any)
#: or the parent's own finished one; both answer ``ready()`` and ``get()``.
Pending = Any


def _init_worker(keys: dict[str, bytes]) -> None:
    # SIGINT is ignored already (ledger.workers.Pool): the parent handles Ctrl-C.
    _KEYS.clear()
    _KEYS.update(keys)


# An object row as sent to a worker: its columns in this order, read and rebuilt by name
# (``_wire``, ``_unwire``). A plain tuple pickles at about a third of a dataclass's cost.
Wire = tuple[object, object, object, object, object, object, object, object, object]


def _wire(row: RawObjectRow) -> Wire:
    return (
        row.digest,
        row.seq,
        row.kind,
        row.schema_version,
        row.object_id,
        row.object_version,
        row.legacy_digest,
        row.legacy_hints,
        row.data,
    )


def _unwire(wire: Wire) -> StoredObject:
    """The row as ``unchecked_object`` gives it (types unchecked), from ``_wire``'s tuple
    (its fields set in one step, as ``unchecked_object`` sets them)."""
    return unchecked_row(wire)


def _check_rows(
    rows: list[Wire],
    signs: list[tuple[bytes, bytes]] | None = None,
    keys: dict[str, bytes] | None = None,
) -> tuple[list[CheckResult | None], Presigned]:
    """``check_object`` of each row, and the verdicts on ``signs`` with ``keys`` (in a
    worker: the keys it was started with)."""
    out: list[CheckResult | None] = []
    for row in rows:
        try:
            out.append(check_object(_unwire(row)))
        except Exception:
            out.append(None)  # the audit recomputes (and reports) this row itself
    return out, presign_read(signs or [], _KEYS if keys is None else keys)


#: What a caller derives from an object that passed every check, and its parsed
#: document (None for a blob), where the check ran: a module-level function (a worker
#: receives it by name) whose result pickles.
Derive = Callable[[StoredObject, "JSONObject | None"], object]
#: A row's check and what ``Derive`` made of it (None: not derived).
Checked = tuple[CheckResult, object]


def _derive_rows(
    rows: list[Wire],
    signs: list[tuple[bytes, bytes]] | None = None,
    keys: dict[str, bytes] | None = None,
    *,
    derive: Derive,
) -> tuple[list[Checked | None], Presigned]:
    """``_check_rows`` with ``derive``'s result on each clean row, from the document
    the check parsed (``check_parsed``)."""
    out: list[Checked | None] = []
    for row in rows:
        try:
            obj = _unwire(row)
            result, doc = check_parsed(obj)
            out.append((result, None if result[0] else derive(obj, doc)))
        except Exception:
            out.append(None)  # the caller recomputes (and reports) this row itself
    return out, presign_read(signs or [], _KEYS if keys is None else keys)


# An entry row as sent to a worker: seq, digest, kind, appended_at, and its object row:
# None (no object row), ``Short`` (its seq, digest and kind are the entry's: the usual
# row, sent without them) or all of it as ``_wire`` sends it.
Short = tuple[object, object, object, object, object, object]
EntryWire = tuple[object, object, object, object, Short | Wire | None]


def _entry_wires(batch: list[RawLogRow]) -> list[EntryWire]:
    """The rows as sent to a worker (``_entry_rows`` rebuilds them)."""
    out: list[EntryWire] = []
    for row in batch:
        seq, digest, kind, obj = row.seq, row.digest, row.kind, row.object
        wire: Short | Wire | None
        if obj is None:
            wire = None
        elif (
            type(seq) is int
            and type(obj.seq) is int
            and type(digest) is str
            and type(obj.digest) is str
            and type(kind) is str
            and type(obj.kind) is str
            and obj.seq == seq
            and obj.digest == digest
            and obj.kind == kind
        ):
            wire = (
                obj.schema_version,
                obj.object_id,
                obj.object_version,
                obj.legacy_digest,
                obj.legacy_hints,
                obj.data,
            )
        else:
            wire = _wire(obj)
        out.append((seq, digest, kind, row.appended_at, wire))
    return out


def _entry_rows(rows: list[EntryWire]) -> list[EntryRow]:
    """``_entry_wires``'s rows back, each object as ``unchecked_object`` gives it."""
    out: list[EntryRow] = []
    for seq, digest, kind, appended_at, wire in rows:
        obj: StoredObject | None
        if wire is None:
            obj = None
        elif len(wire) == 6:  # ``Short``: the entry's seq, digest and kind are the row's
            obj = _unwire((digest, seq, kind, *wire))
        else:
            obj = _unwire(wire)  # the 9 columns of ``Wire``
        out.append((seq, digest, kind, appended_at, obj))
    return out


_ENTRY = attrgetter("seq", "digest", "kind", "appended_at", "object")
# An object row's columns: the three its entry repeats, then those ``Columns`` carries.
_OBJECT = attrgetter(
    *("seq", "digest", "kind", "schema_version", "object_id", "object_version"),
    *("legacy_digest", "legacy_hints", "data"),
)
_NONE = type(None)
_INT: set[type] = {int}
_TEXT: set[type] = {str}
_BYTES: set[type] = {bytes}
_OPTIONAL_INT: set[type] = {int, _NONE}
_OPTIONAL_TEXT: set[type] = {str, _NONE}
# The type each column of ``Columns`` may hold, in its order.
_COLUMN_TYPES: tuple[set[type], ...] = (
    *(_INT, _TEXT, _TEXT, _TEXT),
    *(_OPTIONAL_TEXT, _OPTIONAL_TEXT, _OPTIONAL_INT, _OPTIONAL_TEXT, _OPTIONAL_TEXT, _BYTES),
)


def _entry_columns(batch: list[RawLogRow]) -> Columns | list[EntryWire]:
    """The rows as sent to a worker: column by column (``Columns``: a few tuples pickle
    and unpickle at a fraction of the cost of a tuple per row, and the worker builds no
    row) when every row is the usual one, else as ``_entry_wires`` sends them.

    The usual row: each column of exactly the type ``Columns`` allows, and an object row
    whose seq, digest and kind equal its entry's (compared once the types are known to
    be exact, so that 1 and 1.0 or True are told apart). Decided by C loops over whole
    columns, not a Python test per row.
    """
    if not batch:
        return _entry_wires(batch)
    seqs, digests, kinds, stamps, objects = zip(*map(_ENTRY, batch), strict=True)
    try:
        rows = list(map(_OBJECT, objects))
    except AttributeError:  # an entry without an object row
        return _entry_wires(batch)
    o_seqs, o_digests, o_kinds, *side = zip(*rows, strict=True)
    columns = (seqs, digests, kinds, stamps, *side)
    for column, allowed in zip(columns, _COLUMN_TYPES, strict=True):
        if not set(map(type, column)) <= allowed:
            return _entry_wires(batch)
    if (
        set(map(type, o_seqs)) <= _INT
        and set(map(type, o_digests)) <= _TEXT
        and set(map(type, o_kinds)) <= _TEXT
        and o_seqs == seqs
        and o_digests == digests
        and o_kinds == kinds
    ):
        return columns  # type: ignore[return-value]  # each column's type checked above
    return _entry_wires(batch)


def _check_entries(
    rows: Columns | list[EntryWire],
    signs: list[tuple[bytes, bytes]] | None = None,
    keys: dict[str, bytes] | None = None,
) -> tuple[ChunkCheck, Presigned]:
    """``check_chunk`` of the rows (``_entry_columns``'s), and the verdicts on ``signs``
    (as ``_check_rows``)."""
    presigned = presign_read(signs or [], _KEYS if keys is None else keys)
    if type(rows) is tuple:
        return check_columns(rows), presigned
    return check_chunk(_entry_rows(rows)), presigned  # type: ignore[arg-type]


def default_workers(entries: int) -> int:
    """Processes checking objects for an audit of ``entries`` (the audit's own counts):
    1 (in process) below the threshold, else one per CPU, at most 3."""
    if entries < POOL_THRESHOLD:
        return 1
    return min(3, usable_cpus())


def with_object_checks(
    rows: Iterable[RawLogRow], workers: int = 1, presign: Presign | None = None
) -> Iterator[tuple[RawLogRow, CheckResult | None]]:
    """Yield ``(row, check)`` in row order; ``check`` is None when the row has no object.

    ``workers`` processes check objects: the caller's own and ``workers - 1`` pool
    workers. Chunks go to the pool while fewer than ``_AHEAD`` per worker are pending; when
    more are pending and the oldest is not done, the caller checks the next chunk
    itself instead of waiting (no pickling for it), so neither side idles on two cores.
    Which process checked a chunk changes nothing in what is yielded.

    None may also mean "not computed here": the caller then runs ``check_object`` itself.
    Signature verdicts (``presign``, with workers) reach the memo before their row.
    """
    yield from _per_object(rows, workers, presign, _check_rows)


def _per_object(
    rows: Iterable[RawLogRow],
    workers: int,
    presign: Presign | None,
    check: Callable[
        [list[Wire], list[tuple[bytes, bytes]] | None, dict[str, bytes] | None],
        tuple[list[R], Presigned],
    ],
) -> Iterator[tuple[RawLogRow, R | None]]:
    """Each row with ``check``'s result on its object (None: the row has none)."""

    def pick(batch: list[RawLogRow]) -> list[Wire]:
        return [_wire(row.object) for row in batch if row.object is not None]

    for batch, results in _chunked(rows, workers, presign, pick, check):
        it = iter(results)
        for row in batch:
            yield row, (next(it) if row.object is not None else None)


def with_derived_checks(
    rows: Iterable[RawLogRow], workers: int, presign: Presign | None, derive: Derive
) -> Iterator[tuple[RawLogRow, Checked | None]]:
    """``with_object_checks``, and ``derive`` run where each object was checked, on each
    one the check found clean, with the document the check parsed (a caller reading
    the contents parses nothing again): ``(row, (check, derived))``, ``derived`` None
    for an object with findings; None for a row without an object or not computed."""
    yield from _per_object(rows, workers, presign, functools.partial(_derive_rows, derive=derive))


def with_entry_checks(
    rows: Iterable[RawLogRow], workers: int = 1, presign: Presign | None = None
) -> Iterator[tuple[list[RawLogRow], ChunkCheck]]:
    """Yield consecutive runs of ``rows`` with their ``check_chunk`` (leaf hashes, each
    entry's ``check_entry``, the run's totals), in row order, checked as
    ``with_object_checks`` checks objects (same processes, same presigning).

    The checks read each row exactly as the caller holds it (its columns are sent to the
    worker), so what the caller goes on to judge is what was checked.
    """

    yield from _chunked(rows, workers, presign, _entry_columns, _check_entries)


def _chunked(
    rows: Iterable[RawLogRow],
    workers: int,
    presign: Presign | None,
    pick: Callable[[list[RawLogRow]], W],
    check: Callable[
        [W, list[tuple[bytes, bytes]] | None, dict[str, bytes] | None],
        tuple[R, Presigned],
    ],
) -> Iterator[tuple[list[RawLogRow], R]]:
    """``(chunk, check(pick(chunk)))`` for consecutive chunks of ``rows``, in order, run
    in ``workers`` processes (see ``with_object_checks``); ``check`` also returns the
    verdicts on the signatures it is given, which go to ``presign``'s memo first."""
    recent = RecentSubjects(_RECENT)

    def subjects(batch: list[RawLogRow]) -> list[tuple[bytes, bytes]]:
        """(attestation bytes, its subject's bytes) for attestations whose subject was
        read in the last ``_RECENT`` rows."""
        signs: list[tuple[bytes, bytes]] = []
        for row in batch:
            obj = row.object
            if obj is None or not isinstance(obj.data, bytes):
                continue
            pair = recent.see(row.kind, obj.digest, obj.data)
            if pair is not None:
                signs.append(pair)
        return signs

    def chunks() -> Iterator[list[RawLogRow]]:
        batch: list[RawLogRow] = []
        for row in rows:
            batch.append(row)
            if len(batch) == _CHUNK:
                yield batch
                batch = []
        if batch:
            yield batch

    def merge(
        batch: list[RawLogRow], signs: list[tuple[bytes, bytes]] | None, done: tuple[R, Presigned]
    ) -> tuple[list[RawLogRow], R]:
        result, (verdicts, read) = done
        if presign is not None:
            for verdict in verdicts:
                presign.memo.add(*verdict)
            # Each attestation as the check read it, for the bytes it was given.
            for (attestation, _subject), facts in zip(signs or [], read, strict=True):
                if facts is not None:
                    presign.memo.add_read(attestation, facts)
        return batch, result

    if workers <= 1:
        for batch in chunks():
            yield merge(batch, None, check(pick(batch), None, None))
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    # In row order: a pool task, or a chunk the parent checked itself (its result).
    window: deque[tuple[list[RawLogRow], list[tuple[bytes, bytes]] | None, Pending]] = deque()
    keys = {} if presign is None else presign.keys
    pooled = workers - 1  # the parent is the other checking process
    batches = chunks()
    # The pass holds chunks, rows and results in flight while allocating millions: the
    # collector examines them (and all loaded before) far less often; set before the
    # workers fork, so that they inherit it (``fewer_collections``).
    with fewer_collections(_COLLECT_EVERY):
        first = next(batches, None)
        if first is not None:
            # Checked here before the workers fork: the schema checks it needs (and modules
            # loaded on first use) are built once and inherited, not once in every worker
            # (~0.3 s of CPU per process).
            signs = subjects(first) if presign is not None else None
            window.append((first, signs, _Done(check(pick(first), signs, keys))))
        with Pool(pooled, _init_worker, (keys,), context=context) as pool:
            sent = 0  # pool tasks in the window
            for batch in batches:
                signs = subjects(batch) if presign is not None else None
                if sent >= _AHEAD * pooled and not _ready(window[0][2]):
                    # The workers are behind: rather than wait, the parent checks this chunk
                    # (and its signatures, with the same keys) itself; nothing is pickled.
                    window.append((batch, signs, _Done(check(pick(batch), signs, keys))))
                else:
                    window.append((batch, signs, pool.apply_async(check, (pick(batch), signs))))
                    sent += 1
                # Yield what is done, in row order; wait only when the window is full.
                while window and (len(window) > 2 * _AHEAD * pooled or _ready(window[0][2])):
                    done, given, result = window.popleft()
                    sent -= not isinstance(result, _Done)
                    yield merge(done, given, result.get())
            while window:
                done, given, result = window.popleft()
                yield merge(done, given, result.get())


class _Done(Generic[R]):
    """A chunk's result computed in the parent, read like a pool task's."""

    def __init__(self, result: tuple[R, Presigned]) -> None:
        self._result = result

    def ready(self) -> bool:
        return True

    def get(self) -> tuple[R, Presigned]:
        return self._result


def _ready(task: Pending) -> bool:
    return bool(task.ready())
