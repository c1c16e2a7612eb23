"""C2SP tlog-cosignature/v1 and the tlog-witness decision, without a CLI.

Cosignatures: sign/verify round trips, the signed message spelled out byte by byte from the
spec, wrong witness key, wrong timestamp, another checkpoint, future timestamps, key
strings. The witness: fork and rollback refusal as hypothesis properties over random log
histories, and each tlog-witness status code. No published cosignature/v1 test vectors
exist (C2SP/C2SP and transparency-dev/formats generate keys in their tests), so the
message layout is checked against the spec text and, in tests/test_go_interop.py, against
Go code.
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import InputError
from ledger.log import merkle
from ledger.log.cosignature import (
    COSIGNATURE_SIZE,
    Cosignature,
    CosignatureError,
    check_cosignatures,
    cosign,
    parse_cosignature_line,
    parse_witness_key,
    signed_message,
    verify_cosignature,
    witness_key,
)
from ledger.log.note import Checkpoint, parse_note, sign_note, verifier_key
from ledger.log.witness import (
    EMPTY_ROOT,
    AddCheckpoint,
    WitnessError,
    WitnessState,
    add_checkpoint,
    decode_state,
    parse_request,
)

ORIGIN = "example.test/log"
SEED = bytes(range(32))
LOG_KEY = Ed25519PrivateKey.from_private_bytes(SEED)
LOG_VKEY = verifier_key(ORIGIN, LOG_KEY.public_key())
W_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32, 64)))
W_NAME = "witness.test/w1"
W = witness_key(W_NAME, W_KEY.public_key())
NOW = 1_700_000_000


def body(size: int = 5, root: bytes = b"\x11" * 32) -> bytes:
    return Checkpoint(ORIGIN, size, root).body()


# --------------------------------------------------------------------------- cosignatures


def test_signed_message_is_the_spec_layout() -> None:
    # c2sp.org/tlog-cosignature, "Ed25519 signed message": header line, time line, body.
    spec_body = (
        b"example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    )
    assert signed_message(spec_body, 1679315147) == (
        b"cosignature/v1\ntime 1679315147\n" + spec_body
    )


def test_spec_example_line_decodes_as_a_cosignature() -> None:
    # The example cosignature line in c2sp.org/tlog-cosignature (no public key is published
    # for it, so only its structure can be checked): its timestamp is the example's time.
    line = (
        "\u2014 witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9"
        "dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA=="
    )
    cosig = parse_cosignature_line(line)
    assert cosig.name == "witness.example.com/w1"
    assert cosig.timestamp == 1679315147
    assert cosig.line() == line + "\n"


def test_key_id_uses_type_0x04_and_round_trips() -> None:
    raw = W_KEY.public_key().public_bytes_raw()
    expected = hashlib.sha256(W_NAME.encode() + b"\n\x04" + raw).digest()[:4]
    assert W.key_id == expected
    assert W.vkey() == f"{W_NAME}+{expected.hex()}+" + base64.b64encode(b"\x04" + raw).decode()
    assert parse_witness_key(W.vkey()) == W


@pytest.mark.parametrize(
    "mangle",
    [
        lambda k: k.replace("+", "-", 1),
        lambda k: k[: k.index("+") + 1] + "00000000" + k[k.index("+") + 9 :],
        lambda k: k[:-4],
        lambda k: k.split("+")[0] + "+" + k.split("+", 2)[1] + "+" + "A" * 44,
        lambda k: "bad name+" + k.split("+", 1)[1],
    ],
)
def test_malformed_witness_keys_are_input_errors(mangle: object) -> None:
    assert callable(mangle)
    with pytest.raises(InputError):
        parse_witness_key(mangle(W.vkey()))


def test_a_log_key_is_not_a_witness_key() -> None:
    with pytest.raises(InputError, match="type 01"):
        parse_witness_key(LOG_VKEY)


def test_round_trip_and_line_form() -> None:
    cosig = cosign(body(), W_NAME, W_KEY, NOW)
    assert len(base64.b64decode(cosig.line().split(" ")[2])) == 4 + COSIGNATURE_SIZE
    parsed = parse_cosignature_line(cosig.line())
    assert parsed == cosig
    assert verify_cosignature(body(), parsed, W, now=NOW) == NOW


def test_wrong_witness_key() -> None:
    other = witness_key(W_NAME, Ed25519PrivateKey.generate().public_key())
    cosig = cosign(body(), W_NAME, W_KEY, NOW)
    with pytest.raises(CosignatureError, match="expected"):
        verify_cosignature(body(), cosig, other, now=NOW)
    # Same key ID claimed, another key: the signature does not verify.
    forged = Cosignature(W_NAME, W.key_id, NOW, Ed25519PrivateKey.generate().sign(b"x"))
    with pytest.raises(CosignatureError, match="invalid signature"):
        verify_cosignature(body(), forged, W, now=NOW)


@given(delta=st.integers(min_value=1, max_value=2**40))
@settings(max_examples=30, deadline=None)
def test_wrong_timestamp(delta: int) -> None:
    cosig = cosign(body(), W_NAME, W_KEY, NOW)
    for stamp in (NOW + delta, NOW - min(delta, NOW)):
        if stamp == NOW:
            continue
        moved = Cosignature(cosig.name, cosig.key_id, stamp, cosig.signature)
        with pytest.raises(CosignatureError):
            verify_cosignature(body(), moved, W, now=NOW + 2**41)


def test_future_timestamp_beyond_skew_is_refused() -> None:
    cosig = cosign(body(), W_NAME, W_KEY, NOW + 3600)
    with pytest.raises(CosignatureError, match="no later than"):
        verify_cosignature(body(), cosig, W, now=NOW)
    assert verify_cosignature(body(), cosig, W, now=NOW + 3600) == NOW + 3600


def test_timestamp_bounds() -> None:
    with pytest.raises(CosignatureError):
        signed_message(body(), 2**63)
    assert signed_message(body(), 0).startswith(b"cosignature/v1\ntime 0\n")


@given(
    size=st.integers(min_value=0, max_value=2**64 - 1),
    root=st.binary(min_size=32, max_size=32),
    other_size=st.integers(min_value=0, max_value=2**64 - 1),
    other_root=st.binary(min_size=32, max_size=32),
)
@settings(max_examples=40, deadline=None)
def test_cosignature_on_a_different_checkpoint_fails(
    size: int, root: bytes, other_size: int, other_root: bytes
) -> None:
    cosig = cosign(body(size, root), W_NAME, W_KEY, NOW)
    assert verify_cosignature(body(size, root), cosig, W, now=NOW) == NOW
    if (size, root) != (other_size, other_root):
        with pytest.raises(CosignatureError):
            verify_cosignature(body(other_size, other_root), cosig, W, now=NOW)


def test_a_cosignature_is_not_a_log_signature_and_vice_versa() -> None:
    # Same key pair as log key and as witness key: the key IDs differ (0x01 vs 0x04).
    same = witness_key(ORIGIN, LOG_KEY.public_key())
    note = sign_note(body(), ORIGIN, LOG_KEY)
    result = check_cosignatures(body(), parse_note(note).signatures, [same], now=NOW)
    assert result.valid == () and result.invalid == () and result.unknown == 1


def test_check_cosignatures_counts_each_witness_once_and_reports_bad_lines() -> None:
    w2_key = Ed25519PrivateKey.generate()
    w2 = witness_key("witness.test/w2", w2_key.public_key())
    note = sign_note(body(), ORIGIN, LOG_KEY)
    good1 = cosign(body(), W_NAME, W_KEY, NOW).line()
    good1b = cosign(body(), W_NAME, W_KEY, NOW - 5).line()
    bad2 = cosign(body(size=6), "witness.test/w2", w2_key, NOW).line()
    text = note + (good1 + good1b + bad2).encode()
    result = check_cosignatures(body(), parse_note(text).signatures, [W, w2], now=NOW)
    assert [k for k, _ in result.valid] == [W]
    assert [label for label, _ in result.invalid] == [w2.label]


# --------------------------------------------------------------------------- the witness


def fresh_state() -> WitnessState:
    return decode_state(
        WitnessState(W_NAME, W.vkey(), {}).encode().replace(b'"logs": {}', b'"logs": {}')
    )


def state_for_log() -> WitnessState:
    from ledger.log.witness import LogView

    return WitnessState(W_NAME, W.vkey(), {ORIGIN: LogView(LOG_VKEY)})


def tree_of(leaves: list[bytes]) -> merkle.MemoryTree:
    tree = merkle.MemoryTree()
    for leaf in leaves:
        tree.append(leaf)
    return tree


def signed(tree: merkle.MemoryTree, size: int, key: Ed25519PrivateKey = LOG_KEY) -> bytes:
    root = tree.root(size) if size else EMPTY_ROOT
    return sign_note(Checkpoint(ORIGIN, size, root).body(), ORIGIN, key)


def request(tree: merkle.MemoryTree, old: int, size: int) -> AddCheckpoint:
    # A claimed old size above the checkpoint size has no proof; send none.
    proof = (
        () if old in (0, size) or old > size else tuple(merkle.consistency_proof(old, size, tree))
    )
    return AddCheckpoint(old, proof, signed(tree, size))


def submit(state: WitnessState, req: AddCheckpoint) -> WitnessState:
    result = add_checkpoint(state, req, W_KEY, NOW)
    assert verify_cosignature(result.checkpoint.body(), result.cosignature, W, now=NOW) == NOW
    return result.state


leaves_st = st.lists(st.binary(min_size=0, max_size=4), min_size=1, max_size=40)


@given(leaves=leaves_st, data=st.data())
@settings(max_examples=60, deadline=None)
def test_an_append_only_history_is_always_cosigned(
    leaves: list[bytes], data: st.DataObject
) -> None:
    tree = tree_of(leaves)
    sizes = sorted(
        data.draw(st.lists(st.integers(0, len(leaves)), min_size=1, max_size=6, unique=True))
    )
    state, known = state_for_log(), 0
    for size in sizes:
        state = submit(state, request(tree, known, size))
        known = size
        assert state.logs[ORIGIN].size == size
        assert state.logs[ORIGIN].root == (tree.root(size) if size else EMPTY_ROOT)


@given(
    shared=st.lists(st.binary(max_size=3), max_size=20),
    a_tail=st.lists(st.binary(max_size=3), min_size=1, max_size=20),
    b_tail=st.lists(st.binary(max_size=3), min_size=1, max_size=20),
    data=st.data(),
)
@settings(max_examples=80, deadline=None)
def test_a_fork_is_refused_by_a_witness_that_saw_the_other_branch(
    shared: list[bytes], a_tail: list[bytes], b_tail: list[bytes], data: st.DataObject
) -> None:
    # Two views of one log (same origin, same log key) sharing a prefix. The witness saw
    # branch A at size a; branch B at size b is cosignable iff B extends A's tree at a.
    branch_a, branch_b = shared + a_tail, shared + b_tail
    tree_a, tree_b = tree_of(branch_a), tree_of(branch_b)
    a = data.draw(st.integers(1, len(branch_a)), label="a")
    b = data.draw(st.integers(0, len(branch_b)), label="b")
    state = submit(state_for_log(), request(tree_a, 0, a))
    extends = b >= a and branch_b[:a] == branch_a[:a]
    # The log may claim any old size and send any proof it likes from its own tree.
    claimed = data.draw(st.integers(0, len(branch_b)), label="claimed old size")
    try:
        submit(state, request(tree_b, claimed, b))
    except WitnessError as exc:
        assert not (extends and claimed == a), exc
        if b < a:
            assert exc.status in (400, 409) and exc.exit_code in (1, 3, 4)
        elif claimed == a:
            assert exc.status == 422 and exc.exit_code == 1
    else:
        assert extends and claimed == a


@given(leaves=leaves_st, data=st.data())
@settings(max_examples=60, deadline=None)
def test_rollback_is_refused_for_ever(leaves: list[bytes], data: st.DataObject) -> None:
    # Truncate-and-regrow: the witness saw size `top`; the log shrinks to `cut` and grows
    # back with other entries. Any checkpoint that does not extend what it saw is refused.
    tree = tree_of(leaves)
    top = data.draw(st.integers(1, len(leaves)))
    cut = data.draw(st.integers(0, top - 1))
    regrown = leaves[:cut] + data.draw(st.lists(st.binary(min_size=5, max_size=6), min_size=1))
    state = submit(state_for_log(), request(tree, 0, top))
    other = tree_of(regrown)
    for size in range(0, len(regrown) + 1):
        for claimed in {0, cut, top, size}:
            if claimed > len(regrown):
                continue
            try:
                submit(state, request(other, claimed, size))
            except WitnessError as exc:
                if size < top:
                    assert exc.exit_code in (1, 4, 3)
                continue
            # Accepted only if it really extends the tree the witness saw.
            assert size >= top and claimed == top and regrown[:top] == leaves[:top]
    assert state.logs[ORIGIN].size == top


def test_status_codes() -> None:
    tree = tree_of([b"a", b"b", b"c", b"d"])
    state = submit(state_for_log(), request(tree, 0, 2))

    def status(req: AddCheckpoint, st_: WitnessState = state) -> int:
        with pytest.raises(WitnessError) as info:
            add_checkpoint(st_, req, W_KEY, NOW)
        return info.value.status

    other_origin = sign_note(
        Checkpoint("other.test/log", 4, tree.root(4)).body(), "other.test/log", LOG_KEY
    )
    assert status(AddCheckpoint(2, (), other_origin)) == 404
    forged = signed(tree, 4, Ed25519PrivateKey.generate())
    assert status(AddCheckpoint(2, (), forged)) == 403
    assert status(AddCheckpoint(5, (), signed(tree, 4))) == 400
    with pytest.raises(WitnessError) as info:
        add_checkpoint(state, request(tree, 3, 4), W_KEY, NOW)
    assert info.value.status == 409 and info.value.known_size == 2
    bad_proof = AddCheckpoint(2, (b"\x00" * 32,), signed(tree, 4))
    assert status(bad_proof) == 422
    empty_bad = sign_note(Checkpoint(ORIGIN, 0, b"\x01" * 32).body(), ORIGIN, LOG_KEY)
    assert status(AddCheckpoint(0, (), empty_bad), state_for_log()) == 422
    assert status(AddCheckpoint(0, (b"\x00" * 32,), signed(tree, 3)), state_for_log()) == 422
    same_size_other_root = sign_note(Checkpoint(ORIGIN, 2, b"\x02" * 32).body(), ORIGIN, LOG_KEY)
    assert status(AddCheckpoint(2, (), same_size_other_root)) == 422
    # Same size, same root: cosigned again (a fresh timestamp).
    assert submit(state, request(tree, 2, 2)).logs[ORIGIN].size == 2


def test_request_encoding_round_trip_and_strictness() -> None:
    tree = tree_of([b"a", b"b", b"c"])
    req = request(tree, 1, 3)
    assert parse_request(req.encode()) == req
    text = req.encode()
    for broken in (
        text.replace(b"old 1", b"old 01"),
        text.replace(b"old 1", b"old -1"),
        text.replace(b"old 1\n", b"old 1\nnot-base64\n"),
        b"old 1\n" + b"AAAA\n" * 64 + b"\n" + req.note,
        text.split(b"\n\n", 1)[0],
    ):
        with pytest.raises(WitnessError) as info:
            parse_request(broken)
        assert info.value.status == 400


def test_state_round_trip() -> None:
    tree = tree_of([b"a", b"b"])
    state = submit(state_for_log(), request(tree, 0, 2))
    assert decode_state(state.encode()) == state
    assert fresh_state().logs == {}


def test_concurrent_requests_are_decided_one_at_a_time(tmp_path: object) -> None:
    # c2sp.org/tlog-witness: check-and-record must be atomic, or two requests checked
    # against the same old size could both be cosigned and the second roll the first back.
    import threading
    from pathlib import Path

    from ledger.log.witness import WitnessFiles, create_witness

    assert isinstance(tmp_path, Path)
    files = WitnessFiles(tmp_path / "w.json")
    create_witness(files.path, W_NAME, [LOG_VKEY])
    tree = tree_of([bytes([i]) for i in range(16)])
    outcomes: list[int] = []
    start = threading.Barrier(8)

    def attempt(size: int) -> None:
        start.wait()
        try:
            files.add_checkpoint(request(tree, 0, size))
            outcomes.append(size)
        except WitnessError as exc:
            assert exc.status == 409
            outcomes.append(-1)

    threads = [threading.Thread(target=attempt, args=(size,)) for size in range(9, 17)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [size for size in outcomes if size > 0]
    assert len(outcomes) == 8 and len(winners) == 1
    assert files.read().logs[ORIGIN].size == winners[0]
