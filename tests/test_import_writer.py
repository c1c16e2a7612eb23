"""The import writer's shortcuts, each against its reference path.

- Admission reads a batch's own objects from memory (``ledger.store.batch.BatchReader``):
  every object it serves equals what the store's ``get`` re-derives from the rows.
- Import workers verify attestation signatures ahead (``ledger.trust.presign``): with
  workers the writer verifies none itself when every subject was prepared by the same
  worker shortly before, the refusals (exit code, message, ledger state) are the same
  with and without workers, a forged signature is still refused (exit 4), and an
  attestation whose subject is in an earlier batch or import is still checked.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import io
import json
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import bench_corpus
import ctrl_c
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledger_state import state
from typer.testing import CliRunner

from ledger.cli import app
from ledger.encoding.canonical import DEFAULT_LIMITS
from ledger.log.leaf import entry_record
from ledger.log.merkle import PendingNodes, leaf_hash
from ledger.store.base import (
    OBJECT_COLUMNS,
    AppendResult,
    Entry,
    LedgerReader,
    SignatureVerdicts,
    StoredObject,
)
from ledger.store.batch import BatchReader, BatchRows, admitted_batch, plan_rows
from ledger.store.bulk import (
    GC_THRESHOLD,
    Block,
    _fields,
    _prepared,
    _Presigner,
    import_jsonl,
    prepare_block,
)
from ledger.store.prepared import Prepared, prepare_json
from ledger.store.sqlite import open_store
from ledger.trust import judgement
from ledger.trust.admission import AdmissionPolicy, default_policy
from ledger.trust.dsse import pae
from ledger.trust.identity import trust_index
from ledger.trust.keys import Ed25519Signer, verify
from ledger.trust.presign import RecentSubjects, presign_read, signing_keys

ROOT = Path(__file__).resolve().parents[1]
PROVLEDGER = ROOT / ".venv" / "bin" / "provledger"
GROUP = bench_corpus.GROUP  # 9 documents per task, the last one the attestation


def _docs(db: Path, n: int, seed: int = 5) -> list[dict[str, Any]]:
    """``n`` corpus documents; each task's attestation signed by the ledger's authority."""
    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    return list(bench_corpus.corpus(n, seed, signer))


def _jsonl(docs: Sequence[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(doc).encode() + b"\n" for doc in docs)


class _Counted:
    """Counts the Ed25519 checks the importing process makes itself."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0

        def counted(*args: Any) -> bool:
            self.calls += 1
            return verify(*args)

        monkeypatch.setattr(judgement, "verify", counted)


# -- admission reads the batch from memory ----------------------------------------------


class _Spy(AdmissionPolicy):
    """The package's policy, which first checks, for every object of the batch, the
    batch reader against the store it wraps."""

    def __init__(self) -> None:
        policy = default_policy()
        super().__init__(policy.governance, policy.state_rules, policy.attestation)
        self.served = 0

    def admit(
        self,
        reader: LedgerReader,
        new: Sequence[StoredObject],
        *,
        history: bool,
        signatures: SignatureVerdicts | None = None,
    ) -> None:
        assert isinstance(reader, BatchReader)
        store = reader._store
        for obj in new:
            assert reader.get(obj.digest) == store.get(obj.digest) == obj
            self.served += 1
        missing = "sha256:" + "0" * 64
        assert reader.get(missing) is None
        assert reader.size() == store.size()
        super().admit(reader, new, history=history, signatures=signatures)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 1000), batch=st.integers(1, 40), repeat=st.integers(0, 20))
def test_batch_reader_serves_exactly_what_the_store_reads(
    ledger_path: Path, seed: int, batch: int, repeat: int
) -> None:
    docs = _docs(ledger_path, 2 * GROUP, seed)
    # A document repeated in the input (already stored when its batch comes) is not new.
    lines = _jsonl([*docs, docs[repeat % len(docs)]])
    spy = _Spy()
    with open_store(ledger_path, policy=spy) as store:
        summary = import_jsonl(store, io.BytesIO(lines), batch=batch, workers=1)
    assert summary.new == spy.served


# -- signatures verified by the workers ----------------------------------------------------


def test_with_workers_the_writer_verifies_no_signature(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _jsonl(_docs(ledger_path, 6 * GROUP))  # one block: every subject paired
    counted = _Counted(monkeypatch)
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(lines), batch=10, workers=2)
    assert summary.ok and summary.new == 6 * GROUP
    assert counted.calls == 0


def test_with_workers_the_writer_parses_no_attestation(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers hand over each attestation as they parsed it (``SignatureMemo.read``):
    the writer's judgement parses none itself, and without workers it parses each."""
    lines = _jsonl(_docs(ledger_path, 6 * GROUP))  # one block: every subject paired
    parsed: list[int] = []  # the process of each parse the judgement makes
    reference = judgement.parse_attestation

    def counted(data: bytes) -> Any:
        parsed.append(os.getpid())
        return reference(data)

    monkeypatch.setattr(judgement, "parse_attestation", counted)
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(lines), batch=10, workers=2)
    assert summary.ok and summary.new == 6 * GROUP
    assert parsed == []
    with open_store(ledger_path) as store:
        others = _jsonl(_docs(ledger_path, 7 * GROUP, seed=11))
        summary = import_jsonl(store, io.BytesIO(others), batch=10, workers=1)
    assert summary.ok and summary.new == 7 * GROUP
    assert parsed == [os.getpid()] * 7


def test_without_workers_the_writer_verifies_every_signature(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _jsonl(_docs(ledger_path, 6 * GROUP))
    counted = _Counted(monkeypatch)
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(lines), batch=10, workers=1)
    assert summary.ok and counted.calls == 6


def test_a_subject_in_an_earlier_import_is_still_checked(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No worker saw the subject: the writer verifies the signature, and a forged one is
    refused."""
    docs = _docs(ledger_path, GROUP)
    with open_store(ledger_path) as store:
        import_jsonl(store, io.BytesIO(_jsonl(docs[:-1])), workers=2)
    counted = _Counted(monkeypatch)
    forged = _jsonl([_forge(docs[-1], "other-key")])
    with open_store(ledger_path) as store, pytest.raises(judgement_refusal()) as refused:
        import_jsonl(store, io.BytesIO(forged), workers=2)
    assert "bad-signature" in str(refused.value)
    assert counted.calls == 1
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(_jsonl(docs[-1:])), workers=2)
    assert summary.new == 1 and counted.calls == 2


def judgement_refusal() -> type[Exception]:
    from ledger.trust.admission import AdmissionRefused

    return AdmissionRefused


def test_worker_verdicts_are_the_reference_verdicts(ledger_path: Path) -> None:
    """``prepare_block`` with a presigner: one verdict per attestation whose subject it
    prepared (same block or an earlier one), equal to ``verify`` over the PAE."""
    docs = _docs(ledger_path, 3 * GROUP)
    docs[GROUP - 1] = _forge(docs[GROUP - 1], "other-key")
    lines = [json.dumps(doc).encode() for doc in docs]
    with open_store(ledger_path, readonly=True) as store:
        keys = signing_keys(trust_index(store))
    presigner = _Presigner(keys, RecentSubjects(16))
    # The third task's subject in one block, its attestation in the next.
    first = prepare_block(Block(1, tuple(lines[:-1]), 0), None, DEFAULT_LIMITS, presigner)
    second = prepare_block(Block(len(lines), tuple(lines[-1:]), 0), None, DEFAULT_LIMITS, presigner)
    verdicts = first.verdicts + second.verdicts
    assert [ok for *_, ok in verdicts] == [False, True, True]
    prepared = [prepare_json(line) for line in lines]
    pairs = [(prepared[i].data, prepared[i - GROUP + 1].data) for i in (8, 17, 26)]
    assert verdicts == presign_read(pairs, keys)[0]
    for (key, _, sig, ok), (att, subject) in zip(verdicts, pairs, strict=True):
        detached = json.loads(att)
        message = pae(detached["payloadType"], subject)
        assert verify(key, message, sig) is ok
    # Far enough back, the subject is forgotten: no verdict, the writer decides.
    small = _Presigner(keys, RecentSubjects(4))
    assert prepare_block(Block(1, tuple(lines[:9]), 0), None, DEFAULT_LIMITS, small).verdicts == []
    # An unknown key id gives no verdict either.
    none = _Presigner({}, RecentSubjects(16))
    assert prepare_block(Block(1, tuple(lines[:9]), 0), None, DEFAULT_LIMITS, none).verdicts == []


# -- the same refusals with and without workers ---------------------------------------------


def _forge(attestation: dict[str, Any], how: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(json.dumps(attestation))
    sig = value["signatures"][0]
    if how == "other-key":  # another key's signature under the authority's key id
        other = Ed25519PrivateKey.from_private_bytes(b"\7" * 32).sign(b"something")
        sig["sig"] = base64.b64encode(other).decode("ascii")
    elif how == "flipped":  # the authority's signature, one bit changed
        raw = bytearray(base64.b64decode(sig["sig"]))
        raw[5] ^= 1
        sig["sig"] = base64.b64encode(bytes(raw)).decode("ascii")
    elif how == "unregistered":
        sig["keyid"] = "ab" * 32
    elif how == "payload-type":
        value["payloadType"] = "application/vnd.provledger.blob"
    elif how == "subject-kind":
        value["subject"]["kind"] = "evaluator-plan"
    elif how == "subject-missing":
        value["subject"]["digest"] = "sha256:" + "1" * 64
    else:
        raise AssertionError(how)
    return value


HOWS = ["other-key", "flipped", "unregistered", "payload-type", "subject-kind", "subject-missing"]


@pytest.mark.parametrize("how", HOWS)
def test_refusals_are_the_same_with_and_without_workers(
    ledger_path: Path, runner: CliRunner, how: str
) -> None:
    docs = _docs(ledger_path, 4 * GROUP)
    docs[3 * GROUP - 1] = _forge(docs[3 * GROUP - 1], how)
    source = ledger_path.with_name("in.jsonl")
    source.write_bytes(_jsonl(docs))
    outcomes = []
    for workers in ("1", "2"):
        copy = ledger_path.parent / f"w{workers}"
        copy.mkdir()
        for path in ledger_path.parent.glob(ledger_path.name + "*"):
            (copy / path.name).write_bytes(path.read_bytes())
        db = copy / ledger_path.name
        args = ["import", "jsonl", str(source), "--db", str(db), "--batch", "9"]
        result = runner.invoke(app, [*args, "--workers", workers])
        outcomes.append((result.exit_code, result.stderr, result.stdout, state(db)))
    assert outcomes[0][:3] == outcomes[1][:3]
    exit_code, stderr, _, (size, _) = outcomes[0]
    assert exit_code == 4 and stderr.startswith("error: ") and stderr.count("\n") == 1
    assert outcomes[1][3][0] == size == 2 * GROUP  # the two batches before the refused one


def test_a_forged_signature_is_refused_by_the_installed_cli(ledger_path: Path) -> None:
    if not PROVLEDGER.exists():
        pytest.skip(f"console script absent: {PROVLEDGER}")
    docs = _docs(ledger_path, 3 * GROUP)
    docs[2 * GROUP - 1] = _forge(docs[2 * GROUP - 1], "other-key")
    source = ledger_path.with_name("in.jsonl")
    source.write_bytes(_jsonl(docs))
    cmd = [str(PROVLEDGER), "import", "jsonl", str(source), "--db", str(ledger_path)]
    refused = subprocess.run([*cmd, "--workers", "2"], capture_output=True, text=True)
    assert refused.returncode == 4, refused.stderr
    assert "bad-signature" in refused.stderr and refused.stderr.count("\n") == 1
    assert state(ledger_path)[0] == 0


# -- the writer's per-object steps against their plain forms -----------------------------


def _reference_plan_rows(
    items: Sequence[Prepared], known: dict[str, Entry], seq: int, tree: Any, stamps: Sequence[str]
) -> BatchRows:
    """``plan_rows`` written plainly (its form before the writer's loop was tightened)."""
    rows = BatchRows()
    for i, item in enumerate(items):
        entry = known.get(item.digest)
        if entry is not None:
            rows.results.append(AppendResult(entry, new=False))
            continue
        appended_at = stamps[i]
        entry = Entry(seq, item.digest, item.kind, appended_at)
        known[item.digest] = entry
        rows.entries.append((seq, item.digest, item.kind, appended_at))
        rows.objects.append(
            (
                item.digest,
                seq,
                item.kind,
                item.schema_version,
                item.object_id,
                item.object_version,
                item.legacy_digest,
                item.legacy_hints,
                item.data,
            )
        )
        rows.refs.extend((item.digest, rel, target) for rel, target in item.refs)
        added = rows.totals.setdefault(item.kind, [0, 0, 0])
        added[0] += 1
        added[1] += 1
        added[2] += len(item.data)
        leaf = leaf_hash(entry_record(seq, item.kind, item.digest, appended_at))
        rows.nodes.extend(tree.append(seq, leaf))
        rows.results.append(AppendResult(entry, new=True))
        seq += 1
    return rows


class _NoNodes:
    def node(self, level: int, index: int) -> bytes:
        return hashlib.sha256(b"%d/%d" % (level, index)).digest()


_ITEMS = [prepare_json(json.dumps(doc).encode()) for doc in bench_corpus.corpus(40, 9)]


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(_ITEMS) - 1), max_size=30),
    stored=st.lists(st.integers(0, len(_ITEMS) - 1), max_size=5),
    seq=st.integers(0, 5000),
)
def test_plan_rows_equals_its_plain_form(picks: list[int], stored: list[int], seq: int) -> None:
    items = [_ITEMS[i] for i in picks]
    known = {_ITEMS[i].digest: Entry(i, _ITEMS[i].digest, _ITEMS[i].kind, "t") for i in stored}
    stamps = [f"2026-12-01T00:00:{i:02d}.000000Z" for i in range(len(items))]
    fast_known, plain_known = dict(known), dict(known)
    fast = plan_rows(items, fast_known, seq, _NoNodes(), stamps)
    plain = _reference_plan_rows(items, plain_known, seq, PendingNodes(_NoNodes()), stamps)
    # The same tree nodes (the reference's leaf by leaf, the writer's level by level).
    assert sorted(fast.nodes) == sorted(plain.nodes) and len(set(fast.nodes)) == len(fast.nodes)
    fast.nodes = plain.nodes = []
    assert fast == plain and fast_known == plain_known
    assert fast.totals_rows() == plain.totals_rows()


def test_prepared_built_from_fields_equals_its_constructor() -> None:
    """``_prepared`` sets the fields by name without ``__init__``: the same value, as long
    as ``Prepared`` stays a plain frozen dataclass (no ``__post_init__``, no slots)."""
    assert not hasattr(Prepared, "__post_init__") and not hasattr(Prepared, "__slots__")
    for item in _ITEMS:
        # prepare_json builds its value the same way: equal to the constructor's.
        made = Prepared(**{f.name: getattr(item, f.name) for f in fields(Prepared)})
        assert item == made and hash(item) == hash(made) and vars(item) == vars(made)
        assert type(item) is Prepared and list(vars(item)) == list(vars(made))
        with pytest.raises(AttributeError):
            item.kind = "x"  # type: ignore[misc]
        built = _prepared(_fields(item))
        assert built == item and hash(built) == hash(item) and vars(built) == vars(item)
        assert type(built) is Prepared
        with pytest.raises(AttributeError):
            built.digest = "x"  # type: ignore[misc]


def test_writer_values_made_without_init_equal_their_constructors(ledger_path: Path) -> None:
    """``plan_rows`` and ``admitted_batch`` make entries, results and objects without
    their ``__init__`` (``ledger.store.batch._new``): the same values, hashes and
    fields, as long as the classes stay plain frozen dataclasses."""
    for cls in (Entry, AppendResult, StoredObject):
        assert not hasattr(cls, "__post_init__") and not hasattr(cls, "__slots__")
    # A stored object's fields are a prepared one's, ``seq`` for ``refs`` (admitted_batch
    # copies the field dict), and a prepared value holds its fields only.
    prepared_fields = [f.name for f in fields(Prepared)]
    assert [f.name for f in fields(StoredObject)] == list(OBJECT_COLUMNS)
    assert {*prepared_fields} - {"refs"} | {"seq"} == {*OBJECT_COLUMNS}
    assert all(list(vars(item)) == prepared_fields for item in _ITEMS)
    stamps = [f"2026-12-01T00:00:{i:02d}.000000Z" for i in range(len(_ITEMS))]
    rows = plan_rows(_ITEMS, {}, 11, PendingNodes(_NoNodes()), stamps)
    for i, result in enumerate(rows.results):
        item = _ITEMS[i]
        entry = Entry(11 + i, item.digest, item.kind, stamps[i])
        made = AppendResult(entry, new=True)
        assert result == made and hash(result) == hash(made) and vars(result) == vars(made)
        assert vars(result.entry) == vars(entry) and hash(result.entry) == hash(entry)
        assert type(result) is AppendResult and type(result.entry) is Entry
        with pytest.raises(AttributeError):
            result.entry.seq = 0  # type: ignore[misc]
    seen: list[StoredObject] = []

    def write(items: Sequence[Prepared]) -> list[AppendResult]:
        return plan_rows(items, {}, 11, PendingNodes(_NoNodes()), stamps).results

    class Keep(AdmissionPolicy):
        def admit(self, reader: LedgerReader, new: Sequence[StoredObject], **_: Any) -> None:
            seen.extend(new)

    with open_store(ledger_path) as store:
        admitted_batch(store, _ITEMS, write, Keep(), history=False)
    assert len(seen) == len(_ITEMS)
    for i, obj in enumerate(seen):
        item = _ITEMS[i]
        made_obj = StoredObject(
            **{name: 11 + i if name == "seq" else getattr(item, name) for name in OBJECT_COLUMNS}
        )
        assert obj == made_obj and hash(obj) == hash(made_obj) and vars(obj) == vars(made_obj)
        assert type(obj) is StoredObject


def test_fewer_collections_while_importing_and_settings_restored(ledger_path: Path) -> None:
    lines = _jsonl(_docs(ledger_path, 4 * GROUP))
    before = (gc.get_threshold(), gc.get_freeze_count())
    seen: list[tuple[tuple[int, int, int], int]] = []

    class _Watch:
        def __init__(self, store: Any) -> None:
            self._store = store

        def append_many(self, *args: Any, **options: Any) -> Any:
            seen.append((gc.get_threshold(), gc.get_freeze_count()))
            return self._store.append_many(*args, **options)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._store, name)

    with open_store(ledger_path) as store:
        import_jsonl(_Watch(store), io.BytesIO(lines), batch=GROUP)  # type: ignore[arg-type]
        assert (gc.get_threshold(), gc.get_freeze_count()) == before
        with pytest.raises(KeyboardInterrupt):
            import_jsonl(_Crash(store), io.BytesIO(lines), batch=GROUP)  # type: ignore[arg-type]
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
    assert seen and all(t[0] >= GC_THRESHOLD and frozen > 0 for t, frozen in seen)


class _Crash:
    def __init__(self, store: Any) -> None:
        self._store = store

    def append_many(self, *args: Any, **options: Any) -> Any:
        raise KeyboardInterrupt

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_an_interrupted_import_with_workers_leaves_a_prefix_and_no_process(
    ledger_path: Path,
) -> None:
    import multiprocessing

    docs = _docs(ledger_path, 6 * GROUP)
    lines = _jsonl(docs)
    digests = [prepare_json(json.dumps(doc).encode()).digest for doc in docs]
    with open_store(ledger_path) as store:
        with pytest.raises(KeyboardInterrupt):
            import_jsonl(_CrashOn(store, 3), io.BytesIO(lines), batch=GROUP, workers=2)  # type: ignore[arg-type]
        assert not multiprocessing.active_children()
        assert [e.digest for e in store.entries()] == digests[: 2 * GROUP]
        summary = import_jsonl(store, io.BytesIO(lines), batch=GROUP, workers=2)
    assert (summary.new, summary.present) == (4 * GROUP, 2 * GROUP)
    assert not multiprocessing.active_children()


class _CrashOn:
    def __init__(self, store: Any, crash_on: int) -> None:
        self._store = store
        self._calls = 0
        self._crash_on = crash_on

    def append_many(self, *args: Any, **options: Any) -> Any:
        self._calls += 1
        if self._calls == self._crash_on:
            raise KeyboardInterrupt
        return self._store.append_many(*args, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_ctrl_c_with_workers_ends_the_import_with_a_prefix(ledger_path: Path) -> None:
    """SIGINT to the whole process group (Ctrl-C): the workers ignore it, the importer
    stops (exit 130) and ends them; the ledger holds a prefix of the input."""
    if not PROVLEDGER.exists():
        pytest.skip(f"console script absent: {PROVLEDGER}")
    docs = _docs(ledger_path, 2000)
    source = ledger_path.with_name("in.jsonl")
    source.write_bytes(_jsonl(docs))
    cmd = [str(PROVLEDGER), "import", "jsonl", str(source), "--db", str(ledger_path)]
    proc = ctrl_c.start([*cmd, "--batch", "20", "--workers", "2"])
    while proc.poll() is None and state(ledger_path)[0] < 40:
        time.sleep(0.01)
    stderr = ctrl_c.interrupt(proc)
    with open_store(ledger_path, readonly=True) as store:
        stored = [e.digest for e in store.entries()]
    assert stored == [prepare_json(json.dumps(d).encode()).digest for d in docs][: len(stored)]
    if proc.returncode != 0:  # 0 only if it finished before the signal arrived
        assert proc.returncode == 130, stderr.decode()
        assert b"Traceback" not in stderr
