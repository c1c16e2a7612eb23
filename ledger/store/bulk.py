"""Bulk import of JSON Lines: validate every line like ``append``, write in ordered batches.

Guarantees (docs/PERFORMANCE.md states them for users):
- Each non-blank line is one document, prepared exactly as ``provledger append`` does
  (``ledger.store.prepared.prepare_json``: strict parse, kind, schema, canonical bytes).
- Lines that fail are rejected with their line number and a one-line reason and are
  never written; blank (whitespace-only) lines are skipped. Every rejection is counted,
  but only the first ``MAX_REJECTIONS`` (by line number) are kept with their reasons,
  in a block's result and in the summary, so memory does not grow with the number of
  bad lines.
- Valid lines are appended in input order, ``batch`` at a time, each batch one
  transaction. After a crash the ledger therefore holds exactly a prefix of the
  input's valid lines; appends are idempotent, so re-running the import completes it
  without duplicates (lines already stored count as "already present").
- Preparation may run in worker processes; results are consumed in input order and
  a bounded number of blocks are in flight, so memory does not grow with the input.
  Workers read the blocks of a regular file themselves (``Span``).
- With workers, attestation signatures are verified there too
  (``ledger.trust.presign``): a worker that prepares an attestation whose subject it
  prepared shortly before (same block, or its last ``RECENT_SUBJECTS`` documents)
  checks the signature with the key its key id names among those known when the
  import starts, and the writer's admission takes that verdict from a
  ``SignatureMemo`` only for exactly that key, message and signature; it also takes
  the attestation as the worker parsed it, only for exactly those bytes
  (``SignatureMemo.read``). Everything else is verified by admission as without
  workers: the refusals are the same.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import multiprocessing.pool
import operator
import os
import stat
import zlib
from collections import deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, BinaryIO

from ledger.collection import fewer_collections
from ledger.encoding.canonical import DEFAULT_LIMITS, Limits
from ledger.errors import DocumentTooLargeError, InputError, LedgerError
from ledger.store.base import Store
from ledger.store.prepared import Prepared, prepare_json
from ledger.trust.attestation import AttestationFacts
from ledger.trust.presign import Presign, RecentSubjects, Verdict, presign_read, signing_keys
from ledger.workers import Pool, usable_cpus

# Valid lines per transaction. The threaded writer holds two batches at once (one being
# written, one being gathered): at 12,500 an import's process tree peaked at ~300 MB at 1M
# objects; 6,000 is sized for the 256 MB budget (docs/PERFORMANCE.md), at a few us per
# object of extra index writes.
DEFAULT_BATCH = 6000
BLOCK_BYTES = 1 << 20  # lines are shipped to workers in blocks of about this size
GC_THRESHOLD = 200_000  # allocations between collections while importing (``fewer_collections``)
WARM_LINES = 32  # lines prepared before the workers fork (see ``_warm``)
RECENT_SUBJECTS = 1024  # documents a worker keeps to pair an attestation with its subject
# Tasks in flight per worker (``_ordered_results``). A task that carries its block's
# bytes holds them in the importer until a worker takes it; a ``Span`` holds nothing,
# so more can be queued. Each finished one waits in the importer, unpickled (~1.3 MB),
# until it is used, and they pile up exactly when the importer waits for the writer,
# holding a full batch already: the next batch is then ready when the writer is, so
# a few per worker keep the workers busy.
BLOCKS_PER_WORKER = 2
SPANS_PER_WORKER = 4
_BLANK = b" \t\r"
MAX_REJECTIONS = 1000  # rejections kept with their reasons (the rest are only counted)


def default_workers() -> int:
    """min(2, CPUs available to this process)."""
    return min(2, usable_cpus())


@dataclass(frozen=True)
class Rejection:
    """One rejected line: its 1-based number, the error class and a one-line reason."""

    line: int
    error: str
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"line": self.line, "error": self.error, "reason": self.reason}


@dataclass(frozen=True)
class ImportSummary:
    """What an import did (``import jsonl --json``). ``ok`` iff no line was rejected;
    ``rejected`` holds the first ``MAX_REJECTIONS`` rejections, ``rejected_count``
    counts every rejected line."""

    lines: int = 0
    blank: int = 0
    new: int = 0
    present: int = 0
    batches: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    size: int = 0
    canonical_bytes: int = 0
    rejected: tuple[Rejection, ...] = ()
    rejected_count: int = 0

    @property
    def ok(self) -> bool:
        return self.rejected_count == 0

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "lines": self.lines,
            "blank": self.blank,
            "new": self.new,
            "present": self.present,
            "rejected": self.rejected_count,
            "rejections": [r.to_json() for r in self.rejected],  # the first MAX_REJECTIONS
            "batches": self.batches,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "ledger_size": self.size,
            "canonical_bytes": self.canonical_bytes,
        }


class ImportTally:
    """An import's counts while it runs (``ImportSummary``'s members, mutable);
    ``summary()`` is the frozen value the import returns."""

    def __init__(self) -> None:
        self.lines = self.blank = self.new = self.present = self.batches = 0
        self.size = self.canonical_bytes = self.rejected_count = 0
        self.first_seq: int | None = None
        self.last_seq: int | None = None
        self.rejected: list[Rejection] = []  # the first MAX_REJECTIONS

    def reject(self, kept: list[Rejection], count: int) -> None:
        """Add a block's rejections (in line order): all counted, the first few kept."""
        self.rejected_count += count
        self.rejected.extend(kept[: MAX_REJECTIONS - len(self.rejected)])

    def summary(self) -> ImportSummary:
        return ImportSummary(**{**vars(self), "rejected": tuple(self.rejected)})


# -- reading ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """Whole lines ``first``, ``first + 1``, ... of the input (newlines stripped).

    ``oversize`` holds (line, byte length) of lines longer than the document limit;
    their bytes were skipped while reading, never held in memory.
    """

    first: int
    lines: tuple[bytes, ...]
    nbytes: int
    oversize: tuple[tuple[int, int], ...] = ()
    offset: int = -1  # where ``lines`` start in the source (-1: unknown)


@dataclass(frozen=True)
class Region:
    """A block as the importer read it, its lines not split: lines ``first`` ...
    ``first + count - 1``, ``length`` bytes of the source from ``offset`` holding them
    joined by their newlines; ``nbytes``, ``oversize`` and ``offset`` as in ``Block``.

    ``data`` holds those bytes when the reader kept them (``read_regions(keep=True)``);
    otherwise ``check`` is their Adler-32, and a worker reads them itself (``Span``).
    """

    first: int
    count: int
    nbytes: int
    oversize: tuple[tuple[int, int], ...] = ()
    offset: int = -1
    length: int = 0
    data: bytes | None = None
    check: int | None = None

    def block(self) -> Block:
        """The ``Block`` of these lines (their bytes must have been kept)."""
        lines: tuple[bytes, ...] = ()
        if self.count:
            if self.data is None:
                raise ValueError("region, got its lines not kept, expected their bytes")
            lines = tuple(self.data.split(b"\n"))
        return Block(self.first, lines, self.nbytes, self.oversize, self.offset)


def read_blocks(
    source: BinaryIO, limits: Limits = DEFAULT_LIMITS, block_bytes: int = BLOCK_BYTES
) -> Iterator[Block]:
    """Split a byte stream into blocks of whole lines, in order, in bounded memory."""
    for region in read_regions(source, limits, block_bytes):
        yield region.block()


def read_regions(
    source: BinaryIO,
    limits: Limits = DEFAULT_LIMITS,
    block_bytes: int = BLOCK_BYTES,
    *,
    keep: bool = True,
) -> Iterator[Region]:
    """``read_blocks``'s blocks as ``Region`` values (the same lines, numbers, byte
    counts, oversize lines and offsets), found by counting newlines: no line is split
    here. ``keep``: each region holds its bytes; else only their Adler-32, and the
    bytes read are not copied again (a worker reads them from the file)."""
    line_no = 1  # number of the line that ``pending`` starts
    pending = b""  # start of a line whose end has not been read yet
    unreported = 0  # bytes read but not yet counted in a yielded block
    position = 0  # bytes read from ``source`` so far
    # A line longer than this can only be rejected; stop buffering it.
    cap = limits.max_bytes + 2
    skipping: tuple[int, int] | None = None  # (line, bytes so far) of an oversize line
    while True:
        chunk = source.read(block_bytes)
        if not chunk:
            break
        position += len(chunk)
        unreported += len(chunk)
        oversize: list[tuple[int, int]] = []
        start = 0  # where the chunk's bytes after ``pending`` begin
        if skipping is not None:  # then ``pending`` is empty
            cut = chunk.find(b"\n")
            if cut < 0:
                skipping = (skipping[0], skipping[1] + len(chunk))
                continue
            oversize.append((skipping[0], skipping[1] + cut))
            skipping = None
            line_no += 1
            start = cut + 1
        # The lines are ``pending`` + ``chunk[start:end]`` (``pending`` holds no newline).
        offset = position - (len(chunk) - start) - len(pending)
        end = chunk.rfind(b"\n", start)
        count = length = 0
        data: bytes | None = b"" if keep else None
        check: int | None = None
        if end < 0:
            pending += chunk[start:]
        else:
            count = chunk.count(b"\n", start, end) + 1
            length = len(pending) + end - start
            lines = memoryview(chunk)[start:end]
            if keep:
                data = b"".join((pending, lines))
            else:
                check = zlib.adler32(lines, zlib.adler32(pending))
            pending = chunk[end + 1 :]
        if count or oversize:
            yield Region(line_no, count, unreported, tuple(oversize), offset, length, data, check)
            unreported = 0
            line_no += count
        if len(pending) > cap:
            skipping, pending = (line_no, len(pending)), b""
    if skipping is not None:
        yield Region(line_no, 0, unreported, (skipping,), data=b"" if keep else None)
    elif pending or unreported:
        offset, length = position - len(pending), len(pending)
        yield Region(
            line_no,
            1 if pending else 0,
            unreported,
            (),
            offset,
            length,
            pending if keep else None,
            None if keep else zlib.adler32(pending),
        )


# -- preparing (runs in workers) ---------------------------------------------------------

# A prepared line travels as a plain tuple of Prepared's fields (cheaper to pickle),
# packed and unpacked by field name.
PreparedFields = tuple[Any, ...]
_PREPARED_FIELDS = tuple(f.name for f in fields(Prepared))


@dataclass(frozen=True)
class BlockResult:
    """Prepared documents of one block, in order, plus its rejections and blank count,
    and the signature verdicts computed ahead for its attestations, with each of those
    attestations as the worker read it (workers only)."""

    prepared: list[PreparedFields]
    rejected: list[Rejection]  # the block's first MAX_REJECTIONS, in line order
    blank: int
    lines: int
    nbytes: int
    verdicts: list[Verdict] = field(default_factory=list)
    rejected_count: int = 0  # every rejected line of the block
    # (attestation bytes, ``parse_attestation`` of them) for each attestation read ahead
    reads: list[tuple[bytes, AttestationFacts]] = field(default_factory=list)


_fields: Callable[[Prepared], PreparedFields] = operator.attrgetter(*_PREPARED_FIELDS)


def _prepared(values: PreparedFields) -> Prepared:
    """The ``Prepared`` whose fields, by name, are ``values`` (as its ``__init__`` would
    set them: the writer builds one per document, and the frozen dataclass's
    ``__init__`` costs a ``object.__setattr__`` per field)."""
    item: Prepared = object.__new__(Prepared)
    item.__dict__.update(zip(_PREPARED_FIELDS, values, strict=True))
    return item


@dataclass
class _Presigner:
    """In a worker: the signing keys known when the import started, and the documents
    it prepared last (each worker sees its own blocks only)."""

    keys: dict[str, bytes]
    recent: RecentSubjects


_PRESIGNER: list[_Presigner] = []  # set in each worker by _init_worker


def _init_worker(keys: dict[str, bytes]) -> None:
    # SIGINT is ignored already (ledger.workers.Pool): the parent handles Ctrl-C.
    _PRESIGNER.clear()
    if keys:
        _PRESIGNER.append(_Presigner(keys, RecentSubjects(RECENT_SUBJECTS)))


def prepare_block(
    block: Block, kind: str | None, limits: Limits, presigner: _Presigner | None = None
) -> BlockResult:
    """Prepare every line of a block; ``LedgerError`` becomes a rejection, not a stop.

    With a ``presigner``, also the verdicts on the attestations whose subjects it holds,
    and those attestations as read (``presign_read``).
    """
    prepared: list[PreparedFields] = []
    rejected: list[Rejection] = []
    count = 0
    signs: list[tuple[bytes, bytes]] = []
    blank = 0
    # Oversize lines precede the block's other lines, and both come in line order: the
    # first MAX_REJECTIONS appended are the block's first by line number.
    for line, size in block.oversize:
        count += 1
        if len(rejected) < MAX_REJECTIONS:
            reason = f"document too large, got {size} bytes, expected at most {limits.max_bytes}"
            rejected.append(Rejection(line, DocumentTooLargeError.__name__, reason))
    for offset, raw in enumerate(block.lines):
        if not raw.strip(_BLANK):
            blank += 1
            continue
        try:
            item = prepare_json(raw, kind, limits)
        except LedgerError as exc:
            count += 1
            if len(rejected) < MAX_REJECTIONS:
                reason = " ".join(str(exc).split())
                rejected.append(Rejection(block.first + offset, type(exc).__name__, reason))
            continue
        prepared.append(_fields(item))
        if presigner is not None:
            pair = presigner.recent.see(item.kind, item.digest, item.data)
            if pair is not None:
                signs.append(pair)
    lines = len(block.lines) + len(block.oversize)
    verdicts: list[Verdict] = []
    reads: list[tuple[bytes, AttestationFacts]] = []
    if signs and presigner is not None:
        verdicts, facts = presign_read(signs, presigner.keys)
        reads = [(att, f) for (att, _), f in zip(signs, facts, strict=True) if f is not None]
    return BlockResult(prepared, rejected, blank, lines, block.nbytes, verdicts, count, reads)


def _warm(block: Block, kind: str | None, limits: Limits, lines: int = WARM_LINES) -> None:
    """Prepare the first lines of the input once before the workers fork, results
    discarded: the schemas (and lazily loaded modules) they need are then built once
    and inherited, instead of once in every worker."""
    for raw in block.lines[:lines]:
        with contextlib.suppress(LedgerError):  # the worker rejects it, with its line
            prepare_json(raw, kind, limits)


@dataclass(frozen=True)
class Span:
    """A block as a byte range of a regular file, read by the worker (``os.pread`` on
    the descriptor it inherited when forked) instead of shipped through a pipe.

    ``count`` and ``check`` (Adler-32) describe the bytes the importer read there; a
    worker that reads anything else refuses the block, so a file changed in place
    during the import stops it instead of shifting its lines.
    """

    first: int
    fd: int
    base: int  # file position where reading started: ``Block.offset`` counts from it
    offset: int
    length: int
    count: int
    check: int
    nbytes: int
    oversize: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, region: Region, fd: int, base: int) -> Span:
        check = region.check
        if check is None:
            check = zlib.adler32(region.data or b"")
        return cls(
            region.first,
            fd,
            base,
            region.offset,
            region.length,
            region.count,
            check,
            region.nbytes,
            region.oversize,
        )

    def read(self) -> Block:
        """The block as ``read_blocks`` yields it; ``InputError`` if the bytes changed."""
        region = os.pread(self.fd, self.length, self.base + self.offset)
        lines = region.split(b"\n")
        if (
            len(region) != self.length
            or len(lines) != self.count
            or zlib.adler32(region) != self.check
        ):
            raise InputError(
                "input changed while being imported, got other bytes at offset"
                f" {self.base + self.offset}, expected the bytes read before"
            )
        return Block(self.first, tuple(lines), self.nbytes, self.oversize, self.offset)


def _spannable(source: BinaryIO) -> tuple[int, int] | None:
    """(descriptor, position) of ``source`` when workers may ``pread`` it: a regular
    file, not read from yet. Lines are numbered from that position (a redirected
    standard input need not start at the beginning of its file)."""
    try:
        fd = source.fileno()
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        base = source.tell()
    except (AttributeError, OSError, ValueError):
        return None
    return (fd, base) if regular and hasattr(os, "pread") else None


def _prepare_task(args: tuple[Region | Span, str | None, Limits]) -> BlockResult:
    task, kind, limits = args
    block = task.read() if isinstance(task, Span) else task.block()
    return prepare_block(block, kind, limits, _PRESIGNER[0] if _PRESIGNER else None)


def _ordered_results(
    source: BinaryIO,
    kind: str | None,
    limits: Limits,
    workers: int,
    keys: dict[str, bytes] | None = None,
    file: tuple[int, int] | None = None,
) -> Generator[BlockResult, None, None]:
    """Prepared blocks of ``source`` in input order; with workers > 1, a bounded window
    in flight.

    ``keys`` (workers only): key id -> raw key, for the workers' signature checks.
    ``file``: (descriptor, start position) of the input when it is a regular file the
    (forked) workers may read themselves (``Span``).
    """
    if workers <= 1:
        for region in read_regions(source, limits):
            yield prepare_block(region.block(), kind, limits)
        return
    methods = multiprocessing.get_all_start_methods()
    # fork: workers inherit the imported modules and compiled schemas for free; they
    # only run pure functions, never touch the caller's database connection.
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    forked = context.get_start_method() == "fork"
    spans = file if forked else None
    depth = (BLOCKS_PER_WORKER if spans is None else SPANS_PER_WORKER) * workers
    window: deque[Any] = deque()  # pool AsyncResults (multiprocessing types them Any)
    # With spans the importer keeps no line bytes: it counts the lines and checksums them.
    regions = read_regions(source, limits, keep=spans is None)
    first = next(regions, None)
    if first is not None and forked:
        sample = Span.of(first, *spans).read() if spans and first.count else first.block()
        _warm(sample, kind, limits)
    with Pool(workers, _init_worker, (keys or {},), context=context) as pool:
        for region in itertools.chain(() if first is None else (first,), regions):
            # Without a span, the region's bytes travel (one object to pickle).
            task: Region | Span = region
            if spans is not None and region.offset >= 0 and region.count:
                task = Span.of(region, *spans)
            window.append(pool.apply_async(_prepare_task, ((task, kind, limits),)))
            if len(window) > depth:
                yield window.popleft().get()
        while window:
            yield window.popleft().get()


# -- writing -----------------------------------------------------------------------------


def import_jsonl(
    store: Store,
    source: BinaryIO,
    *,
    kind: str | None = None,
    batch: int = DEFAULT_BATCH,
    workers: int = 1,
    limits: Limits = DEFAULT_LIMITS,
    advance: Callable[[int], None] = lambda _n: None,
) -> ImportSummary:
    """Import a JSON Lines stream into ``store``; see the module docstring.

    ``advance`` is called with the number of input bytes consumed. Raises only for
    usage errors and storage failures; bad lines end up in ``ImportSummary.rejected``.
    """
    if batch < 1:
        raise InputError(f"batch size, got {batch}, expected at least 1")
    if kind == "blob":
        raise InputError("kind, got 'blob', expected a JSON kind (JSON Lines hold JSON)")
    summary = ImportTally()
    # The writer holds a batch and the rows planned for it until it commits: GC_THRESHOLD
    # is more than the containers a batch holds (~12 per document), so most are freed
    # before a pass examines them (at 50,000 each pass promoted a live batch: ~3 us per
    # document of the importer's CPU).
    with store.bulk_session(), fewer_collections(GC_THRESHOLD):
        presign = _presign(store) if workers > 1 else None
        _import(store, source, kind, batch, workers, limits, advance, summary, presign)
    summary.size = store.size()
    return summary.summary()


def _import(
    store: Store,
    source: BinaryIO,
    kind: str | None,
    batch: int,
    workers: int,
    limits: Limits,
    advance: Callable[[int], None],
    summary: ImportTally,
    presign: Presign | None = None,
) -> None:
    memo = None if presign is None else presign.memo
    keys = None if presign is None else presign.keys

    def write(items: list[Prepared]) -> None:
        results = store.append_many(items, signatures=memo)
        summary.batches += 1
        added = [(item, result) for item, result in zip(items, results, strict=True) if result.new]
        summary.new += len(added)
        summary.present += len(items) - len(added)
        if added:
            summary.canonical_bytes += sum([len(item.data) for item, _ in added])
            if summary.first_seq is None:
                summary.first_seq = added[0][1].entry.seq
            summary.last_seq = added[-1][1].entry.seq

    file = _spannable(source) if workers > 1 else None
    results = _ordered_results(source, kind, limits, workers, keys, file)
    pending: list[Prepared] = []
    # Closed on any exit, so the workers are shut down at once, not when collected; the
    # writer is done with every batch handed to it before that.
    with contextlib.closing(results), _batch_writer(write, workers > 1) as hand_off:
        for result in results:
            if memo is not None:
                # Before the block's documents join a batch: admission finds them there.
                for verdict in result.verdicts:
                    memo.add(*verdict)
                for data, facts in result.reads:  # the writer then parses none of them
                    memo.add_read(data, facts)
            summary.lines += result.lines
            summary.blank += result.blank
            summary.reject(result.rejected, result.rejected_count)
            for values in result.prepared:
                pending.append(_prepared(values))
                if len(pending) >= batch:
                    hand_off(pending)
                    pending = []
            advance(result.nbytes)
        if pending:
            hand_off(pending)


@contextlib.contextmanager
def _batch_writer(
    write: Callable[[list[Prepared]], None], threaded: bool
) -> Iterator[Callable[[list[Prepared]], None]]:
    """What the importer hands each full batch to: ``write`` itself, or (``threaded``,
    with workers) ``write`` on a thread of its own.

    The writer's flush (admission, planning the rows, inserting them) is serial and
    takes about as long as the workers need to prepare a batch; done by the importer
    itself, no results were taken meanwhile, so the workers filled their window and
    waited. On its own thread, the importer keeps taking results (and handing the
    workers new blocks) while the previous batch is written. Still one batch at a
    time, in input order: a batch is handed off only once the one before it has been
    written, and that batch's error is raised there, so nothing is written after a
    batch that failed. When the block ends, every batch handed off has been written;
    if it ends with an error of its own, that error wins over the writer's.
    """
    if not threaded:
        yield write
        return
    thread = ThreadPoolExecutor(1, thread_name_prefix="provledger-writer")
    writing: list[Future[None]] = []  # the batch being written, if any

    def hand_off(items: list[Prepared]) -> None:
        if writing:
            writing.pop().result()
        writing.append(thread.submit(write, items))

    failed = True
    try:
        yield hand_off
        failed = False
    finally:
        try:
            if writing and failed:
                with contextlib.suppress(Exception):  # the importer's own error wins
                    writing.pop().result()
            elif writing:
                writing.pop().result()
        finally:
            thread.shutdown(wait=True)


def _presign(store: Store) -> Presign:
    """The signing keys the ledger knows now (authority, identities), and a memo."""
    from ledger.trust.identity import trust_index
    from ledger.trust.judgement import SignatureMemo

    return Presign(signing_keys(trust_index(store)), SignatureMemo())
