"""`provledger import jsonl`: per-line validation, ordered batches, idempotence, exit codes."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import bench_corpus
import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.encoding.canonical import Limits
from ledger.store.bulk import Block, import_jsonl, prepare_block, read_blocks
from ledger.store.prepared import prepare_json
from ledger.store.sqlite import open_store

ROOT = Path(__file__).resolve().parents[1]
SUMMARY_KEYS = {
    "ok", "lines", "blank", "new", "present", "rejected", "rejections", "batches",
    "first_seq", "last_seq", "ledger_size", "canonical_bytes",
}  # fmt: skip


def _lines(n: int, db: Path | None = None, seed: int = 3) -> list[bytes]:
    """``n`` generated documents of mixed kinds (attestations when a ledger is given)."""
    signer = None
    if db is not None:
        from ledger.trust.keys import Ed25519Signer

        signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    return [json.dumps(doc).encode() for doc in bench_corpus.corpus(n, seed, signer)]


def _stored_digests(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT digest FROM entries ORDER BY seq")]


def _import(runner: CliRunner, db: Path, path: str, *extra: str, data: bytes | None = None) -> Any:
    args = ["import", "jsonl", path, "--db", str(db), "--json", *extra]
    return runner.invoke(app, args, input=data)


def test_mixed_kinds_in_input_order(ledger_path: Path, runner: CliRunner, tmp_path: Path) -> None:
    lines = _lines(27, ledger_path)
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    result = _import(runner, ledger_path, str(source), "--batch", "4", "--workers", "1")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert set(summary) == SUMMARY_KEYS
    assert summary["ok"] is True
    assert (summary["new"], summary["present"], summary["rejected"]) == (27, 0, 0)
    assert summary["batches"] == 7  # ceil(27 / 4)
    assert (summary["first_seq"], summary["last_seq"], summary["ledger_size"]) == (0, 26, 27)
    expected = [prepare_json(line) for line in lines]
    assert _stored_digests(ledger_path) == [p.digest for p in expected]
    assert summary["canonical_bytes"] == sum(len(p.data) for p in expected)
    kinds = {p.kind for p in expected}
    assert kinds == {
        "work-unit", "evaluator-plan", "result-manifest", "verification-result", "attestation",
    }  # fmt: skip
    verify = runner.invoke(app, ["verify", "--db", str(ledger_path), "--json"])
    assert verify.exit_code == 0, verify.output


def test_workers_give_the_same_ledger(ledger_path: Path, runner: CliRunner, tmp_path: Path) -> None:
    lines = _lines(40)
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(lines[:20]) + b"\n\nnot json\n" + b"\n".join(lines[20:]))
    result = _import(runner, ledger_path, str(source), "--workers", "2", "--batch", "7")
    assert result.exit_code == 3, result.output
    summary = json.loads(result.stdout)
    assert summary["new"] == 40
    assert [r["line"] for r in summary["rejections"]] == [22]
    assert _stored_digests(ledger_path) == [prepare_json(line).digest for line in lines]


def test_duplicates_and_already_present(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    lines = _lines(6)
    first = tmp_path / "first.json"
    first.write_bytes(lines[2])
    assert runner.invoke(app, ["append", "--db", str(ledger_path), str(first)]).exit_code == 0
    # Line 5 repeats line 1 with other whitespace and key order: same canonical object.
    respelled = json.dumps(dict(reversed(json.loads(lines[0]).items())), indent=None).encode()
    body = b"\n".join([*lines, respelled, lines[1]]) + b"\n"
    source = tmp_path / "in.jsonl"
    source.write_bytes(body)
    result = _import(runner, ledger_path, str(source))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["new"], summary["present"]) == (5, 3)
    assert len(_stored_digests(ledger_path)) == 6


def test_rejected_lines_are_reported_and_never_written(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    good = _lines(4)
    wrong_kind = json.loads(good[0])
    wrong_kind["kind"] = "code"  # WorkUnit schema violation
    bad = [
        good[0],  # 1
        b"",  # 2 blank
        b"{not json",  # 3
        good[1],  # 4
        json.dumps(wrong_kind).encode(),  # 5
        b'{"a": 1, "a": 2}',  # 6
        b"   \t ",  # 7 blank
        b'{"hello": "world"}',  # 8 unknown kind
        b"[9007199254740993]",  # 9
        good[2],  # 10
        b'"\xff"',  # 11 invalid UTF-8
        good[3],  # 12 (no trailing newline)
    ]
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(bad))
    result = _import(runner, ledger_path, str(source))
    assert result.exit_code == 3, result.output
    summary = json.loads(result.stdout)
    assert summary["ok"] is False
    assert (summary["lines"], summary["blank"], summary["new"]) == (12, 2, 4)
    got = [(r["line"], r["error"]) for r in summary["rejections"]]
    assert got == [
        (3, "ParseError"),
        (5, "SchemaError"),
        (6, "DuplicateKeyError"),
        (8, "KindError"),
        (9, "IntegerRangeError"),
        (11, "InvalidUtf8Error"),
    ]
    for r in summary["rejections"]:
        assert "\n" not in r["reason"] and r["reason"]
    assert "at $.kind" in summary["rejections"][1]["reason"]
    assert _stored_digests(ledger_path) == [prepare_json(line).digest for line in good]


def test_human_output_and_exit_codes(ledger_path: Path, runner: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(_lines(1)[0] + b"\n{\n")
    result = runner.invoke(app, ["import", "jsonl", str(source), "--db", str(ledger_path)])
    assert result.exit_code == 3
    assert result.stderr.startswith("error: line 2: malformed JSON")
    assert result.stdout.startswith("imported 2 lines: 1 new, 0 already present, 1 rejected")
    nope = str(tmp_path / "nope")
    missing = runner.invoke(app, ["import", "jsonl", nope, "--db", str(ledger_path)])
    assert missing.exit_code == 3 and missing.stderr.startswith("error: input file not found")
    no_db = runner.invoke(app, ["import", "jsonl", str(source), "--db", str(tmp_path / "x.db")])
    assert no_db.exit_code == 3
    assert runner.invoke(app, ["import", "jsonl", str(source), "--batch", "0"]).exit_code == 2


def test_stdin_and_idempotent_rerun(ledger_path: Path, runner: CliRunner) -> None:
    data = b"\n".join(_lines(12)) + b"\n"
    first = _import(runner, ledger_path, "-", data=data)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["new"] == 12
    stored = _stored_digests(ledger_path)
    again = _import(runner, ledger_path, "-", data=data)
    assert again.exit_code == 0
    summary = json.loads(again.stdout)
    assert (summary["new"], summary["present"], summary["first_seq"]) == (0, 12, None)
    assert _stored_digests(ledger_path) == stored


def test_kind_option(ledger_path: Path, runner: CliRunner) -> None:
    plan = [line for line in _lines(2) if b'"binding"' in line]
    wrong = _import(runner, ledger_path, "-", "--kind", "work-unit", data=plan[0])
    assert wrong.exit_code == 3
    assert json.loads(wrong.stdout)["rejections"][0]["error"] in {"KindError", "SchemaError"}
    right = _import(runner, ledger_path, "-", "--kind", "evaluator-plan", data=plan[0])
    assert right.exit_code == 0
    blob = _import(runner, ledger_path, "-", "--kind", "blob", data=plan[0])
    assert blob.exit_code == 3


class _CrashingStore:
    """Delegates to a real store but dies on the n-th batch (a crash mid-import)."""

    def __init__(self, store: Any, crash_on: int) -> None:
        self._store = store
        self._calls = 0
        self._crash_on = crash_on

    def append_many(self, items: Any, precheck: Any = None, **options: Any) -> Any:
        self._calls += 1
        if self._calls == self._crash_on:
            raise KeyboardInterrupt
        return self._store.append_many(items, precheck, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_crash_leaves_a_prefix_and_rerun_completes(ledger_path: Path) -> None:
    lines = _lines(23)
    data = b"\n".join(lines[:10]) + b"\nbroken\n" + b"\n".join(lines[10:]) + b"\n"
    digests = [prepare_json(line).digest for line in lines]
    with open_store(ledger_path) as store:
        with pytest.raises(KeyboardInterrupt):
            import_jsonl(_CrashingStore(store, 3), io.BytesIO(data), batch=5)
        assert _stored_digests(ledger_path) == digests[:10]
        summary = import_jsonl(store, io.BytesIO(data), batch=5)
    assert (summary.new, summary.present, len(summary.rejected)) == (13, 10, 1)
    assert summary.rejected[0].line == 11
    assert _stored_digests(ledger_path) == digests


def test_oversize_lines_are_rejected_without_buffering() -> None:
    doc = b'{"a": 1}'
    data = doc + b"\n" + b"x" * 5000 + b"\n" + doc + b"\n" + b"y" * 300
    limits = Limits(max_bytes=100)
    blocks = list(read_blocks(io.BytesIO(data), limits, block_bytes=64))
    assert all(len(line) <= limits.max_bytes + 2 for b in blocks for line in b.lines)
    assert sum(b.nbytes for b in blocks) == len(data)
    results = [prepare_block(b, None, limits) for b in blocks]
    rejected = sorted((r.line, r.error) for res in results for r in res.rejected)
    assert rejected == [
        (1, "KindError"),
        (2, "DocumentTooLargeError"),
        (3, "KindError"),
        (4, "DocumentTooLargeError"),
    ]
    reasons = [r.reason for res in results for r in res.rejected if r.line == 2]
    assert reasons == ["document too large, got 5000 bytes, expected at most 100"]


def test_block_line_numbers_cover_every_line() -> None:
    text = b"".join(b"line%d\n" % i for i in range(1, 200))
    seen: list[tuple[int, bytes]] = []
    for block in read_blocks(io.BytesIO(text), Limits(), block_bytes=17):
        assert isinstance(block, Block)
        seen.extend((block.first + i, line) for i, line in enumerate(block.lines))
    assert seen == [(i, b"line%d" % i) for i in range(1, 200)]
