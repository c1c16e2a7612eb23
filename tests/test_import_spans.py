"""Import workers reading a regular file themselves (``Span``) instead of receiving bytes.

The importer still reads the input once to number its lines; for a regular file the
workers then ``pread`` each block's byte range. The claims tested here:
- a span reads back exactly the block the importer read (any bytes, blank lines, CR,
  a missing final newline, oversize lines around it), from any starting position;
- a span whose bytes changed after the importer read them is refused, never imported;
- an import from a file, from a file at an offset (standard input redirected from a
  partly read file) and from a pipe leave the same ledger and the same summary;
- the pipes between importer and workers are widened where the platform allows.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import bench_corpus
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.encoding.canonical import DEFAULT_LIMITS, Limits
from ledger.errors import InputError, LedgerError
from ledger.store.bulk import Block, Span, _spannable, read_blocks, read_regions
from ledger.store.sqlite import open_store
from ledger.trust.keys import Ed25519Signer
from ledger.workers import PIPE_BYTES, Pool

ROOT = Path(__file__).resolve().parents[1]
PROVLEDGER = ROOT / ".venv" / "bin" / "provledger"

# Line pieces that exercise the reader: blank lines, CR, long and short lines.
_PIECES = st.lists(
    st.one_of(
        st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
        st.sampled_from([b"", b" ", b"\r", b"\t \r", b"x" * 300]),
    ),
    max_size=40,
)


def _spans_of(data: bytes, start: int, block_bytes: int, limits: Limits) -> list[Block]:
    """Every block ``read_blocks`` yields for ``data[start:]``, read back through a span
    of ``data`` written to a real file (oversize blocks are not spans: kept as read)."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"span-{os.getpid()}.bin"
    path.write_bytes(data)
    try:
        with path.open("rb") as source:
            source.seek(start)
            file = _spannable(source)
            assert file is not None and file[1] == start
            out = []
            for region in read_regions(source, limits, block_bytes):
                block = region.block()
                if block.lines and block.offset >= 0:
                    back = Span.of(region, *file).read()
                    assert back == block
                    out.append(back)
                else:
                    out.append(block)
            return out
    finally:
        path.unlink()


@settings(max_examples=200, deadline=None)
@given(
    pieces=_PIECES,
    final_newline=st.booleans(),
    start_at=st.integers(0, 5),
    block_bytes=st.sampled_from([1, 7, 64, 1 << 20]),
)
def test_a_span_reads_back_exactly_the_block(
    pieces: list[bytes], final_newline: bool, start_at: int, block_bytes: int
) -> None:
    data = b"\n".join(pieces) + (b"\n" if final_newline and pieces else b"")
    start = min(start_at, len(data))
    limits = Limits(max_bytes=100, max_depth=DEFAULT_LIMITS.max_depth)
    expected = list(read_blocks(io.BytesIO(data[start:]), limits, block_bytes))
    assert _spans_of(data, start, block_bytes, limits) == expected


def _split_blocks(data: bytes, limits: Limits, block_bytes: int) -> list[Block]:
    """The reader as it was before it counted newlines: each block's lines split from
    the bytes read (the reference ``read_regions`` must agree with)."""
    out: list[Block] = []
    line_no, pending, unreported, position = 1, b"", 0, 0
    skipping: tuple[int, int] | None = None
    for at in range(0, len(data), block_bytes):
        chunk = data[at : at + block_bytes]
        position += len(chunk)
        unreported += len(chunk)
        oversize: list[tuple[int, int]] = []
        if skipping is not None:
            cut = chunk.find(b"\n")
            if cut < 0:
                skipping = (skipping[0], skipping[1] + len(chunk))
                continue
            oversize.append((skipping[0], skipping[1] + cut))
            skipping, line_no, chunk = None, line_no + 1, chunk[cut + 1 :]
        joined = pending + chunk
        offset, end = position - len(joined), joined.rfind(b"\n")
        lines: list[bytes] = []
        if end < 0:
            pending = joined
        else:
            lines, pending = joined[:end].split(b"\n"), joined[end + 1 :]
        if lines or oversize:
            out.append(Block(line_no, tuple(lines), unreported, tuple(oversize), offset))
            unreported, line_no = 0, line_no + len(lines)
        if len(pending) > limits.max_bytes + 2:
            skipping, pending = (line_no, len(pending)), b""
    if skipping is not None:
        out.append(Block(line_no, (), unreported, (skipping,)))
    elif pending or unreported:
        out.append(
            Block(line_no, (pending,) if pending else (), unreported, (), position - len(pending))
        )
    return out


@settings(max_examples=300, deadline=None)
@given(
    pieces=_PIECES,
    final_newline=st.booleans(),
    block_bytes=st.sampled_from([1, 2, 7, 64, 1 << 20]),
    max_bytes=st.sampled_from([0, 5, 100]),
)
def test_counted_regions_are_the_split_blocks(
    pieces: list[bytes], final_newline: bool, block_bytes: int, max_bytes: int
) -> None:
    """The importer counts newlines instead of splitting lines: the same blocks (lines,
    numbers, byte counts, oversize lines, offsets), and each span's line count and
    checksum are those of the split lines joined again."""
    data = b"\n".join(pieces) + (b"\n" if final_newline and pieces else b"")
    limits = Limits(max_bytes=max_bytes, max_depth=DEFAULT_LIMITS.max_depth)
    expected = _split_blocks(data, limits, block_bytes)
    kept = list(read_regions(io.BytesIO(data), limits, block_bytes))
    assert [r.block() for r in kept] == expected
    assert list(read_blocks(io.BytesIO(data), limits, block_bytes)) == expected
    counted = list(read_regions(io.BytesIO(data), limits, block_bytes, keep=False))
    for region, bare, block in zip(kept, counted, expected, strict=True):
        joined = b"\n".join(block.lines)
        assert (region.data, region.count, region.length) == (joined, len(block.lines), len(joined))
        # Without the bytes: the same region, its checksum in their place.
        assert bare == replace(
            region, data=None, check=zlib.adler32(joined) if block.lines else None
        )
        for span in (Span.of(region, 3, 0), Span.of(bare, 3, 0)):
            assert (span.first, span.offset, span.nbytes, span.oversize) == (
                block.first,
                block.offset,
                block.nbytes,
                block.oversize,
            )
            assert (span.length, span.count, span.check) == (
                len(joined),
                len(block.lines),
                zlib.adler32(joined),
            )


def test_a_changed_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    with path.open("rb") as source:
        file = _spannable(source)
        assert file is not None
        (region,) = read_regions(source)
        span = Span.of(region, *file)
        assert span.read() == region.block()
        # Same length, same number of lines, other bytes.
        with path.open("r+b") as edit:
            edit.write(b'{"a": 2}')
        with pytest.raises(InputError, match="input changed while being imported"):
            span.read()
        path.write_bytes(b'{"a": 1}\n')  # shorter
        with pytest.raises(InputError, match="input changed"):
            span.read()


def test_only_regular_files_are_spanned(tmp_path: Path) -> None:
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb") as pipe:
            assert _spannable(pipe) is None
    finally:
        os.close(write)
    assert _spannable(io.BytesIO(b"x\n")) is None  # type: ignore[arg-type]


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_GETPIPE_SZ"), reason="Linux only")
def test_worker_pipes_are_widened() -> None:
    import fcntl
    import multiprocessing

    with Pool(1, context=multiprocessing.get_context("fork")) as pool:
        for end in (pool._inqueue._writer, pool._outqueue._reader):
            assert fcntl.fcntl(end.fileno(), fcntl.F_GETPIPE_SZ) >= PIPE_BYTES


def _corpus(db: Path, n: int) -> bytes:
    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    docs = list(bench_corpus.corpus(n, 3, signer))
    lines = [json.dumps(doc).encode() for doc in docs]
    lines[5] = b'{"kind": "code"'  # rejected, with its line number
    lines.insert(9, b"")  # blank
    return b"\n".join(lines) + b"\n"


def _run(db: Path, args: list[str], stdin: Any = None, data: bytes | None = None) -> dict[str, Any]:
    proc = subprocess.run(
        [str(PROVLEDGER), "import", "jsonl", *args, "--db", str(db), "--json", "--batch", "50"],
        stdin=stdin,
        input=data,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 3, proc.stderr.decode()  # one line is rejected
    summary: dict[str, Any] = json.loads(proc.stdout)
    return summary


def _entries(db: Path) -> list[tuple[int, str, str]]:
    with open_store(db, readonly=True) as store:
        return [(e.seq, e.digest, e.kind) for e in store.entries()]


def test_file_offset_and_pipe_imports_agree(ledger_path: Path, tmp_path: Path) -> None:
    """Through the installed CLI with two workers: a file (spans), standard input
    redirected from the same bytes behind a prefix (spans from that offset), and a pipe
    (bytes shipped). Same ledger, same summary, same rejected line number."""
    if not PROVLEDGER.exists():
        pytest.skip(f"console script absent: {PROVLEDGER}")
    data = _corpus(ledger_path, 400)
    source = tmp_path / "in.jsonl"
    source.write_bytes(data)
    prefixed = tmp_path / "prefixed.jsonl"
    prefix = b"not json, skipped by the caller\n"
    prefixed.write_bytes(prefix + data)
    runs = {}
    for name in ("file", "offset", "pipe"):
        db = tmp_path / name / ledger_path.name
        db.parent.mkdir()
        for sibling in ledger_path.parent.glob(ledger_path.name + "*"):
            (db.parent / sibling.name).write_bytes(sibling.read_bytes())
        if name == "file":
            summary = _run(db, [str(source), "--workers", "2"])
        elif name == "offset":
            with prefixed.open("rb") as f:
                os.lseek(f.fileno(), len(prefix), os.SEEK_SET)
                summary = _run(db, ["-", "--workers", "2"], stdin=f)
        else:
            summary = _run(db, ["-", "--workers", "2"], data=data)
        runs[name] = (summary, _entries(db))
    assert runs["file"] == runs["offset"] == runs["pipe"]
    summary, entries = runs["file"]
    assert [r["line"] for r in summary["rejections"]] == [6]
    assert summary["blank"] == 1 and len(entries) == summary["new"] == 399
    assert summary["lines"] == 401


def _orphan(lock: Any) -> None:
    """In a forked child: take ``lock`` and die holding it, as a worker killed while
    sending its result does."""
    lock.acquire()
    os._exit(0)


def test_a_sentinel_does_not_wait_for_a_lock_a_dead_worker_holds() -> None:
    import multiprocessing
    import threading

    from ledger.workers import SENTINEL_WAIT_S, ResultQueue

    context = multiprocessing.get_context("fork")
    queue = ResultQueue(ctx=context)
    queue.put(("job", 0, (True, b"x" * 1000)))  # results go through as before
    assert queue.get() == ("job", 0, (True, b"x" * 1000))
    child = context.Process(target=_orphan, args=(queue._wlock,))
    child.start()
    child.join()
    assert not queue._wlock.acquire(block=False)  # the lock stays held
    # The stock put blocks for ever here (the task thread's final sentinel).
    putter = threading.Thread(target=queue.put, args=(None,), daemon=True)
    putter.start()
    putter.join(timeout=60)  # a hang guard, not a timing check
    assert not putter.is_alive(), "the sentinel waited for the dead worker's lock"
    assert not queue._poll(0)  # skipped, after at most SENTINEL_WAIT_S
    assert SENTINEL_WAIT_S <= 5


class _Misread(io.BytesIO):
    """What the importer reads (``shown``) is not what the file holds: the workers, who
    read the file by its descriptor, see other bytes in a later block."""

    def __init__(self, shown: bytes, file: Any) -> None:
        super().__init__(shown)
        self._file = file

    def fileno(self) -> int:
        return int(self._file.fileno())


def test_a_refused_span_stops_the_import_after_a_prefix(ledger_path: Path, tmp_path: Path) -> None:
    """Through ``import_jsonl`` with two workers: the refusal raised in a worker reaches
    the importer as ``InputError``, and the ledger holds a prefix of the valid lines."""
    from ledger.store.bulk import BLOCK_BYTES, import_jsonl
    from ledger.store.prepared import prepare_json

    data = _corpus(ledger_path, 1200)
    assert len(data) > 2 * BLOCK_BYTES
    cut = data.rindex(b'"', 0, len(data) - 10)  # inside the last line, same length
    changed = data[: cut - 1] + (b"X" if data[cut - 1 : cut] != b"X" else b"Y") + data[cut:]
    path = tmp_path / "in.jsonl"
    path.write_bytes(changed)
    with path.open("rb") as file, open_store(ledger_path) as store:
        with pytest.raises(InputError, match="input changed while being imported"):
            import_jsonl(store, _Misread(data, file), batch=50, workers=2)  # type: ignore[arg-type]
        stored = [e.digest for e in store.entries()]
    valid = []
    for line in data.splitlines():
        with contextlib.suppress(LedgerError):
            valid.append(prepare_json(line).digest)
    assert 0 < len(stored) < len(valid)
    assert stored == valid[: len(stored)]


@pytest.mark.parametrize(("cpus", "verify", "importing"), [(1, 1, 1), (2, 2, 2), (5, 3, 2)])
def test_worker_counts_follow_the_cpus_this_process_may_use(
    monkeypatch: pytest.MonkeyPatch, cpus: int, verify: int, importing: int
) -> None:
    """One count of usable CPUs (the affinity), capped per command: verify at 3, import at 2."""
    from ledger.audit import parallel
    from ledger.store import bulk

    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cpus)), raising=False)
    assert parallel.default_workers(parallel.POOL_THRESHOLD) == verify
    assert parallel.default_workers(parallel.POOL_THRESHOLD - 1) == 1  # small: in process
    assert bulk.default_workers() == importing
