"""ledger.log.note: signed-note and checkpoint round trips, a pinned known answer, strictness."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from ledger.errors import CheckFailed, InputError
from ledger.log.note import (
    Checkpoint,
    CheckpointError,
    NoteError,
    NoteFailure,
    NoteSignature,
    VerifierKeyError,
    note_key_id,
    open_checkpoint,
    parse_checkpoint,
    parse_note,
    parse_verifier_key,
    sign_note,
    verifier_key,
    verify_note,
)

NAME = "provledger.test/log"
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
PUB_RAW = KEY.public_key().public_bytes_raw()
# Root of the 8-leaf RFC 6962 reference tree (tests/vectors/merkle/vectors.json roots["8"]).
ROOT8 = bytes.fromhex("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")
BODY = Checkpoint(NAME, 8, ROOT8).body()
VKEY = verifier_key(NAME, KEY.public_key())

# Computed once with this module (Ed25519 is deterministic) and pinned; the parts are
# re-derived independently in test_known_answer_parts.
KAT_VKEY = "provledger.test/log+cdd6edad+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"
KAT_NOTE = (
    "provledger.test/log\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\n\n"
    "\u2014 provledger.test/log zdbtrWOk+vAklkZ1vGwmH9cNcbQXBhFhZ9UwhaQNadKFQXgBL0u+HhXXN7yx"
    "uqU0jadpIdF3NGlK24VsHuvR/q1cYgY=\n"
).encode()


def _line(name: str, blob: bytes) -> bytes:
    return f"\u2014 {name} {base64.b64encode(blob).decode()}\n".encode()


# --------------------------------------------------------------------------- known answer


def test_known_answer() -> None:
    assert VKEY == KAT_VKEY
    assert sign_note(BODY, NAME, KEY) == KAT_NOTE
    assert verify_note(KAT_NOTE, KAT_VKEY) == BODY
    assert open_checkpoint(KAT_NOTE, KAT_VKEY, origin=NAME) == Checkpoint(NAME, 8, ROOT8)


def test_known_answer_parts() -> None:
    # Key ID by hand: SHA-256(name || 0x0A || 0x01 || pubkey)[:4].
    kid = hashlib.sha256(NAME.encode() + b"\x0a" + b"\x01" + PUB_RAW).digest()[:4]
    assert note_key_id(NAME, KEY.public_key()) == kid
    material = base64.b64encode(b"\x01" + PUB_RAW).decode()
    assert f"{NAME}+{kid.hex()}+{material}" == KAT_VKEY
    assert b"provledger.test/log\n8\n" + base64.b64encode(ROOT8) + b"\n" == BODY
    body, sep, line = KAT_NOTE.partition(b"\n\n")
    assert body + b"\n" == BODY and sep
    prefix = "\u2014 ".encode() + NAME.encode() + b" "
    assert line.startswith(prefix) and line.endswith(b"\n")
    blob = base64.b64decode(line[len(prefix) : -1], validate=True)
    assert blob[:4] == kid and len(blob) == 68
    KEY.public_key().verify(blob[4:], BODY)  # raises if wrong


# --------------------------------------------------------------------------- round trips


def test_sign_verify_round_trip_and_parse() -> None:
    body = b"any text\n\nwith an empty line \xc3\xa9\n"
    note = sign_note(body, NAME, KEY)
    assert verify_note(note, VKEY) == body
    parsed = parse_note(note)
    assert parsed.body == body
    assert parsed.signatures == (
        NoteSignature(NAME, note_key_id(NAME, KEY.public_key()), KEY.sign(body)),
    )


def test_verifier_key_round_trip() -> None:
    name, kid, public_key = parse_verifier_key(VKEY)
    assert (name, kid) == (NAME, note_key_id(NAME, KEY.public_key()))
    assert public_key.public_bytes_raw() == PUB_RAW


_line_text = st.text(
    st.characters(min_codepoint=0x20, exclude_categories=["Cs"]), min_size=1, max_size=30
)


@given(
    origin=_line_text,
    size=st.integers(0, 2**64 - 1),
    root_hash=st.binary(min_size=32, max_size=32),
    extensions=st.lists(_line_text, max_size=3).map(tuple),
)
def test_checkpoint_round_trip(
    origin: str, size: int, root_hash: bytes, extensions: tuple[str, ...]
) -> None:
    checkpoint = Checkpoint(origin, size, root_hash, extensions)
    body = checkpoint.body()
    assert parse_checkpoint(body) == checkpoint
    assert parse_checkpoint(body).body() == body
    assert open_checkpoint(sign_note(body, NAME, KEY), VKEY) == checkpoint


# --------------------------------------------------------------------------- tampering


def test_every_single_byte_change_is_rejected() -> None:
    for position in range(len(KAT_NOTE)):
        for mask in (0x01, 0x20, 0x80):
            tampered = bytearray(KAT_NOTE)
            tampered[position] ^= mask
            with pytest.raises(NoteError):
                verify_note(bytes(tampered), KAT_VKEY)


def test_every_truncation_and_extension_is_rejected() -> None:
    for end in range(len(KAT_NOTE)):
        with pytest.raises(NoteError):
            verify_note(KAT_NOTE[:end], KAT_VKEY)
    for extra in (b"x", b"\n", b"x\n", b"\n\n", b" "):
        with pytest.raises(NoteError):
            verify_note(KAT_NOTE + extra, KAT_VKEY)


def test_tampered_body_is_a_bad_signature() -> None:
    tampered = KAT_NOTE.replace(b"\n8\n", b"\n9\n", 1)
    with pytest.raises(NoteError) as info:
        verify_note(tampered, KAT_VKEY)
    assert info.value.reason is NoteFailure.BAD_SIGNATURE


# --------------------------------------------------------------------------- key semantics


def test_unknown_signatures_are_ignored_but_one_known_is_required() -> None:
    other_name = "other.example/key"
    other_line = sign_note(BODY, other_name, OTHER)[len(BODY) + 1 :]
    mine = KAT_NOTE[len(BODY) + 1 :]
    both = BODY + b"\n" + other_line + mine
    assert verify_note(both, KAT_VKEY) == BODY
    assert verify_note(BODY + b"\n" + mine + other_line, KAT_VKEY) == BODY
    with pytest.raises(NoteError) as info:
        verify_note(BODY + b"\n" + other_line, KAT_VKEY)
    assert info.value.reason is NoteFailure.UNKNOWN_KEY


def test_same_name_or_same_key_id_alone_is_an_unknown_key() -> None:
    kid = note_key_id(NAME, KEY.public_key())
    signature = KEY.sign(BODY)
    wrong_kid = bytes([kid[0] ^ 1]) + kid[1:]
    for line in (_line(NAME, wrong_kid + signature), _line("someone.else", kid + signature)):
        with pytest.raises(NoteError) as info:
            verify_note(BODY + b"\n" + line, KAT_VKEY)
        assert info.value.reason is NoteFailure.UNKNOWN_KEY


def test_a_bad_signature_from_the_known_key_rejects_the_note() -> None:
    kid = note_key_id(NAME, KEY.public_key())
    good = _line(NAME, kid + KEY.sign(BODY))
    bad = _line(NAME, kid + OTHER.sign(BODY))
    short = _line(NAME, kid + KEY.sign(BODY)[:63])
    for lines in (bad, good + bad, bad + good, short + good):
        with pytest.raises(NoteError) as info:
            verify_note(BODY + b"\n" + lines, KAT_VKEY)
        assert info.value.reason is NoteFailure.BAD_SIGNATURE
    assert verify_note(BODY + b"\n" + good + good, KAT_VKEY) == BODY


def test_signature_count_limit() -> None:
    line = KAT_NOTE[len(BODY) + 1 :]
    assert verify_note(BODY + b"\n" + line * 16, KAT_VKEY) == BODY
    with pytest.raises(NoteError) as info:
        verify_note(BODY + b"\n" + line * 101, KAT_VKEY)
    assert info.value.reason is NoteFailure.MALFORMED


# --------------------------------------------------------------------------- malformed notes


SIG = KAT_NOTE[len(BODY) + 1 :]
MALFORMED_NOTES = {
    "no blank line": BODY + SIG,
    "no signatures": BODY + b"\n",
    "signature without final newline": BODY + b"\n" + SIG[:-1],
    "trailing text line": BODY + b"\n" + SIG + b"Unexpected line.\n",
    "trailing empty line": BODY + b"\n" + SIG + b"\n",
    "non-utf8 body": b"\xff" + BODY + b"\n" + SIG,
    "overlong utf8": b"\xc0\xaf" + BODY + b"\n" + SIG,
    "control character": b"\x01" + BODY + b"\n" + SIG,
    "carriage return": BODY.replace(b"\n", b"\r\n") + b"\r\n" + SIG,
    "tab": b"\t" + BODY + b"\n" + SIG,
    "hyphen instead of em dash": BODY + b"\n" + SIG.replace("\u2014".encode(), b"-", 1),
    "en dash instead of em dash": BODY + b"\n" + SIG.replace("\u2014".encode(), "\u2013".encode()),
    "double space": BODY + b"\n" + SIG.replace(b" ", b"  ", 1),
    "name with plus": BODY + b"\n" + SIG.replace(NAME.encode(), b"a+b", 1),
    "empty name": BODY + b"\n" + SIG.replace(NAME.encode() + b" ", b" ", 1),
    "missing padding": BODY + b"\n" + SIG.replace(b"=\n", b"\n"),
    # 'Y' -> 'Z' changes only the two padding bits: same bytes, second spelling.
    "non-zero padding bits": BODY + b"\n" + SIG.replace(b"gY=\n", b"gZ=\n"),
    "url-safe base64": BODY + b"\n" + SIG.replace(b"+", b"-").replace(b"/", b"_"),
    "too short signature": BODY + b"\n" + _line(NAME, b"\x01\x02\x03\x04"),
}


@pytest.mark.parametrize("note", MALFORMED_NOTES.values(), ids=MALFORMED_NOTES.keys())
def test_malformed_notes_are_rejected(note: bytes) -> None:
    with pytest.raises(NoteError) as info:
        verify_note(note, KAT_VKEY)
    assert info.value.reason is NoteFailure.MALFORMED
    with pytest.raises(NoteError):
        parse_note(note)


def test_sign_note_refuses_bodies_it_could_not_parse_back() -> None:
    for body in (b"no final newline", b"\xff\n", b"a\rb\n", b"tab\there\n"):
        with pytest.raises(NoteError):
            sign_note(body, NAME, KEY)
    for name in ("", "a b", "a+b", "tab\tname"):
        with pytest.raises(VerifierKeyError):
            sign_note(BODY, name, KEY)


# --------------------------------------------------------------------------- checkpoints

ROOT_B64 = base64.b64encode(ROOT8).decode()
MALFORMED_CHECKPOINTS = {
    "leading zero": f"log\n08\n{ROOT_B64}\n",
    "zero with leading zero": f"log\n00\n{ROOT_B64}\n",
    "plus sign": f"log\n+8\n{ROOT_B64}\n",
    "minus sign": f"log\n-8\n{ROOT_B64}\n",
    "negative zero": f"log\n-0\n{ROOT_B64}\n",
    "space before size": f"log\n 8\n{ROOT_B64}\n",
    "space after size": f"log\n8 \n{ROOT_B64}\n",
    "underscore": f"log\n1_000\n{ROOT_B64}\n",
    "arabic-indic digit": f"log\n\u0663\n{ROOT_B64}\n",
    "hex size": f"log\n0x8\n{ROOT_B64}\n",
    "size 2**64": f"log\n{2**64}\n{ROOT_B64}\n",
    "huge size": f"log\n{'9' * 5000}\n{ROOT_B64}\n",
    "empty size": f"log\n\n{ROOT_B64}\n",
    "empty origin": f"\n8\n{ROOT_B64}\n",
    "missing root": "log\n8\n",
    "no final newline": f"log\n8\n{ROOT_B64}",
    "crlf": f"log\r\n8\r\n{ROOT_B64}\r\n",
    "empty extension line": f"log\n8\n{ROOT_B64}\n\n",
    "empty line between extensions": f"log\n8\n{ROOT_B64}\next\n\nmore\n",
    "root missing padding": f"log\n8\n{ROOT_B64.rstrip('=')}\n",
    "root url-safe alphabet": "log\n8\n" + base64.urlsafe_b64encode(b"\xfb" * 32).decode() + "\n",
    "root with space": f"log\n8\n {ROOT_B64}\n",
    "root non-zero padding bits": f"log\n8\n{ROOT_B64[:-2]}h=\n",
    "root 31 bytes": "log\n8\n" + base64.b64encode(bytes(31)).decode() + "\n",
    "root 33 bytes": "log\n8\n" + base64.b64encode(bytes(33)).decode() + "\n",
    "control char in origin": f"lo\x00g\n8\n{ROOT_B64}\n",
}


@pytest.mark.parametrize("body", MALFORMED_CHECKPOINTS.values(), ids=MALFORMED_CHECKPOINTS.keys())
def test_malformed_checkpoints_are_rejected(body: str) -> None:
    with pytest.raises(CheckpointError) as info:
        parse_checkpoint(body.encode())
    assert info.value.reason is NoteFailure.MALFORMED


def test_checkpoint_edge_values_accepted() -> None:
    assert parse_checkpoint(f"log\n0\n{ROOT_B64}\n".encode()).size == 0
    top = parse_checkpoint(f"log\n{2**64 - 1}\n{ROOT_B64}\n".encode())
    assert top.size == 2**64 - 1
    spaced = parse_checkpoint(f"go.sum database tree\n8\n{ROOT_B64}\nx y\n".encode())
    assert spaced.origin == "go.sum database tree" and spaced.extensions == ("x y",)


def test_checkpoint_non_utf8_rejected() -> None:
    with pytest.raises(CheckpointError):
        parse_checkpoint(b"l\xffg\n8\n" + ROOT_B64.encode() + b"\n")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"origin": ""},
        {"origin": "a\nb"},
        {"size": -1},
        {"size": 2**64},
        {"size": True},
        {"root_hash": bytes(31)},
        {"extensions": ("",)},
        {"extensions": ("a\nb",)},
        {"extensions": ["list"]},
    ],
)
def test_checkpoint_constructor_validates(kwargs: dict[str, object]) -> None:
    fields: dict[str, object] = {"origin": "log", "size": 1, "root_hash": ROOT8, **kwargs}
    with pytest.raises(CheckpointError):
        Checkpoint(**fields)  # type: ignore[arg-type]


def test_open_checkpoint_checks_origin_and_signature() -> None:
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(KAT_NOTE, KAT_VKEY, origin="another/log")
    assert info.value.reason is NoteFailure.ORIGIN_MISMATCH
    not_a_checkpoint = sign_note(b"hello\n", NAME, KEY)
    with pytest.raises(CheckpointError):
        open_checkpoint(not_a_checkpoint, KAT_VKEY)
    other_vkey = verifier_key("other.example/key", OTHER.public_key())
    with pytest.raises(NoteError) as note_info:
        open_checkpoint(KAT_NOTE, other_vkey)
    assert note_info.value.reason is NoteFailure.UNKNOWN_KEY


# --------------------------------------------------------------------------- verifier keys


def test_every_mangled_verifier_key_is_rejected() -> None:
    for i in range(len(KAT_VKEY) + 1):
        for j in range(i + 1, len(KAT_VKEY) + 1):
            if (i, j) != (0, len(KAT_VKEY)):
                with pytest.raises(VerifierKeyError):
                    parse_verifier_key(KAT_VKEY[i:j])
    for i, ch in enumerate(KAT_VKEY):
        with pytest.raises(VerifierKeyError):
            parse_verifier_key(KAT_VKEY[:i] + chr(ord(ch) + 1) + KAT_VKEY[i + 1 :])


def test_verifier_key_specific_rejections() -> None:
    name, kid_hex, material = KAT_VKEY.split("+", 2)
    raw = base64.b64decode(material)
    wrong_type = base64.b64encode(b"\x02" + raw[1:]).decode()
    too_long = base64.b64encode(raw + b"x").decode()
    for bad in (
        f"{name}+{kid_hex.upper()}+{material}",
        f"{name}+{kid_hex}+{wrong_type}",
        f"{name}+{kid_hex}+{too_long}",
        f"{name}+{kid_hex}+{material}+",
        f"a b+{kid_hex}+{material}",
        "",
    ):
        with pytest.raises(VerifierKeyError):
            parse_verifier_key(bad)
    with pytest.raises(VerifierKeyError):
        verify_note(KAT_NOTE, "not a key")


def test_error_classes_map_to_exit_codes() -> None:
    assert issubclass(NoteError, CheckFailed) and NoteError.exit_code == 1
    assert issubclass(CheckpointError, NoteError)
    assert issubclass(VerifierKeyError, InputError) and VerifierKeyError.exit_code == 3
