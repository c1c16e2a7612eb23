"""What an object row's side columns must be, re-derived from its bytes.

An ``objects`` row holds the canonical bytes (the record: their SHA-256 is the digest
in the log entry) plus columns that only index them: ``kind``, ``schema_version``,
``object_id``, ``object_version``, ``legacy_digest``, and the ``refs`` rows. Every one
of them is a function of the bytes, so nothing read from them is trusted: ``derive``
recomputes them and ``row_problem`` names the first column that disagrees.

The one exception is ``legacy_hints``: canonical bytes cannot tell ``1`` from ``1.0``,
so the float hints recorded at append time are kept beside the bytes, and they alone
decide the upstream (legacy) digest. They are held to the only change they may make:
each hint turns an integer (never a boolean) at an existing path into the double of
equal value whose Python ``repr`` is the hint's text; the hint list is canonical JSON,
non-empty, one hint per path. Anything else is ``HintError``. So the worst an edit of
the hints can do is make the object answer to the legacy digest of a numerically equal
spelling of the same document; it cannot change what any check reads.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.encoding.canonical import canonical_value, canonicalize, encode, parse_strict
from ledger.encoding.digest import sha256_digest
from ledger.encoding.strict import legacy_bytes
from ledger.encoding.values import child_at, set_at
from ledger.errors import CanonicalFormError, InputError, LedgerError
from ledger.schema.kinds import BLOB, detect_kind, document
from ledger.store.base import StoredObject

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ledger.encoding.values import FloatHint, JSONObject, JSONPath, JSONValue


class HintError(InputError):
    """Stored float hints that do more than turn an integer into an equal double."""


@dataclass(frozen=True)
class Derived:
    """The side columns an object's bytes (and valid float hints) imply."""

    kind: str
    schema_version: str | None
    object_id: str | None
    object_version: int | None
    legacy_digest: str | None
    refs: tuple[tuple[str, str], ...]
    value: JSONObject | None  # the parsed canonical value (None for a blob)

    def columns(self) -> tuple[str | None, str | None, int | None, str | None]:
        return (self.schema_version, self.object_id, self.object_version, self.legacy_digest)


BLOB_DERIVED = Derived(BLOB, None, None, None, None, (), None)


def parse_hints(value: JSONValue, text: str | None) -> list[FloatHint]:
    """The stored hints of ``value`` (its canonical parse), checked; [] for none."""
    if text is None:
        return []
    try:
        raw = text.encode("utf-8")
        # Stored hints are canonical: shown so quickly, else the strict parse decides.
        canonical, hints = canonical_value(raw)
        if not canonical:
            hints = parse_strict(raw)
    except (LedgerError, UnicodeEncodeError) as exc:
        raise HintError(f"float hints are not JSON, got {text[:80]!r}: {exc}") from None
    if not isinstance(hints, list) or not hints:
        raise HintError(f"float hints, got {text[:80]!r}, expected a non-empty JSON array")
    if not canonical and canonicalize(hints) != raw:
        raise HintError(f"float hints, got {text[:80]!r}, expected canonical JSON")
    seen: set[JSONPath] = set()
    checked: list[FloatHint] = []
    for hint in hints:
        path, text = _check_hint(value, hint)
        # A checked path holds only member names (str) and indexes (int, not bool),
        # which never compare equal to each other: the tuple is the path.
        if path in seen:
            shown = canonicalize(list(path)).decode("utf-8")
            raise HintError(f"float hints name path {shown} twice, expected one hint per path")
        seen.add(path)
        checked.append([*path, text])
    return checked


def _check_hint(value: JSONValue, hint: JSONValue) -> tuple[JSONPath, str]:
    """(path, text) of a well-formed hint that names an integer in ``value``, else
    HintError."""
    text = hint[-1] if isinstance(hint, list) and len(hint) >= 2 else None
    if not isinstance(hint, list) or not isinstance(text, str):
        raise HintError(f"float hint, got {hint!r}, expected [path..., repr of a double]")
    path = hint[:-1]
    node = value
    for segment in path:
        if isinstance(segment, bool) or not isinstance(segment, str | int):
            raise HintError(f"float hint path {path!r} does not exist in the object")
        try:
            node = child_at(node, segment)
        except (KeyError, IndexError, TypeError):
            raise HintError(f"float hint path {path!r} does not exist in the object") from None
        if isinstance(segment, int) and segment < 0:  # Python's negative indexes are no path
            raise HintError(f"float hint path {path!r} does not exist in the object")
    try:
        number = float(text)
    except ValueError:
        number = float("nan")
    if not (
        isinstance(node, int)
        and not isinstance(node, bool)
        and repr(number) == text
        and number.is_integer()
        and number == node
    ):
        raise HintError(
            f"float hint at {path!r}, got {text!r} over {node!r},"
            " expected the double equal to the integer stored there"
        )
    return tuple(segment for segment in path if isinstance(segment, str | int)), text


def apply_checked_hints(value: JSONValue, hints: Sequence[FloatHint]) -> JSONValue:
    """``value`` with checked hints applied; ``value`` itself is never changed.

    Copy on write: only the containers on a hinted path are copied (a deep copy of
    every object dominated ``verify``).
    """
    if not hints:
        return value
    out = _shallow(value)
    fresh = {id(out)}
    for *path, text in hints:
        node = out
        for segment in path[:-1]:
            child = child_at(node, segment)
            if id(child) not in fresh:
                child = _shallow(child)
                fresh.add(id(child))
                set_at(node, segment, child)
            node = child
        set_at(node, path[-1], float(text))
    return out


def _shallow(node: JSONValue) -> JSONValue:
    if isinstance(node, dict):
        return dict(node)
    if isinstance(node, list):
        return list(node)
    return node


def derive(kind: str, data: bytes, hints_text: str | None) -> Derived:
    """The side columns of an object stored under ``kind`` with bytes ``data``.

    ``kind`` is the log entry's kind: only it tells a blob from JSON bytes. Raises a
    ``LedgerError`` when the bytes are not a canonical object of a registered kind,
    ``HintError`` when the hints are invalid.
    """
    if kind == BLOB:
        if hints_text is not None:
            raise HintError("float hints on a blob, expected none")
        return BLOB_DERIVED
    canonical, value = canonical_value(data)
    # Shown canonical: ``json`` writes the value back as ``data``, which is then also
    # its legacy form (a canonical document holds no integral doubles).
    legacy_form = data
    if not canonical:
        encoded = encode(data)
        if encoded.canonical != data:
            raise CanonicalFormError("stored bytes are not RFC 8785 canonical JSON")
        value, legacy_form = encoded.value, encoded.legacy
    doc = document(value)
    spec = detect_kind(doc)
    version = doc.get("schema_version")
    legacy: str | None = None
    if not spec.native:
        hints = parse_hints(doc, hints_text)
        if hints:
            legacy = sha256_digest(legacy_bytes(apply_checked_hints(doc, hints)))
        else:
            legacy = sha256_digest(legacy_form)
    elif hints_text is not None:
        raise HintError("float hints on a ledger-native object, expected none")
    return Derived(
        spec.name,
        version if isinstance(version, str) else None,
        spec.object_id(doc),
        spec.object_version(doc),
        legacy,
        tuple(spec.refs(doc)),
        doc,
    )


def row_problem(obj: StoredObject, entry_digest: object, entry_kind: object) -> str | None:
    """Why the row disagrees with its bytes and its log entry, or None when it agrees."""
    if entry_digest != obj.digest or entry_kind != obj.kind:
        return (
            f"object row is {obj.kind} {obj.digest} at seq {obj.seq}, log entry is"
            f" {entry_kind} {entry_digest}"
        )
    if not isinstance(obj.data, bytes):
        return "object bytes are not a blob"
    actual = "sha256:" + hashlib.sha256(obj.data).hexdigest()
    if actual != obj.digest:
        return f"stored bytes hash to {actual}, expected {obj.digest}"
    try:
        derived = derive(obj.kind, obj.data, obj.legacy_hints)
    except LedgerError as exc:
        return str(exc)
    if derived.kind != obj.kind:
        return f"bytes are a {derived.kind}, row says {obj.kind}"
    stored = (obj.schema_version, obj.object_id, obj.object_version, obj.legacy_digest)
    if stored != derived.columns():
        return f"index columns {stored}, expected {derived.columns()}"
    return None
