"""Strict JSON reading and the reference serializations (RFC 8785, upstream legacy).

This module is the definition; ``ledger.encoding.canonical`` is the public entry point,
which computes the same results faster and hands anything unusual to these functions.

Invariants:
- ``parse_strict`` accepts exactly the I-JSON subset that RFC 8785 can canonicalize:
  UTF-8 without BOM, no duplicate member names, no NaN/Infinity, integers within
  +-(2**53 - 1), no lone surrogates, nothing after the value, bounded depth and size.
  Every rejection is its own ``ParseError`` subclass naming the JSON path.
- Nesting deeper than the limit is refused before the parser runs, by
  ``nesting_exceeds``: a scan that stops at the first segment past the limit, so the
  refusal costs time proportional to where the nesting goes too deep (the first 4 KiB,
  for ``[[[[...``), never a parse or a scan of the whole input. On every document the
  parser would otherwise accept, its verdict is the parser's (property-tested).
- ``reference_canonical_bytes`` is RFC 8785 through the ``rfc8785`` package and nothing
  else.
- ``legacy_bytes`` is upstream IDKMesh's serialization; ``reference_float_hints`` are the
  integral doubles RFC 8785 spells as integers (so the legacy form can be recomputed).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import rfc8785

from ledger.errors import (
    CanonicalFormError,
    DocumentTooLargeError,
    DuplicateKeyError,
    IntegerRangeError,
    InvalidUtf8Error,
    LoneSurrogateError,
    NestingDepthError,
    NonFiniteNumberError,
    ParseError,
    TrailingDataError,
)

if TYPE_CHECKING:
    from ledger.encoding.values import FloatHint, JSONValue

MAX_SAFE_INTEGER = 2**53 - 1
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_DEPTH = 128

_SURROGATE = re.compile("[\ud800-\udfff]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Limits:
    """Resource limits for one document. Depth counts nested arrays/objects."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH


DEFAULT_LIMITS = Limits()


class _Duplicate:
    """Stands in for an object whose member names repeat; reported with its path."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key


class _Constant:
    """Stands in for a NaN/Infinity literal; reported with its path."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _pairs_hook(pairs: list[tuple[str, object]]) -> dict[str, object] | _Duplicate:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                return _Duplicate(key)
            seen.add(key)
    return obj


def _constant_hook(text: str) -> _Constant:
    return _Constant(text)


class _BigInt:
    """Stands in for an integer literal too long to be safe; reported with its path."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _int_hook(text: str) -> int | _BigInt:
    # 2**53 has 16 digits; longer literals are out of range, and past 4300 digits
    # Python's int() would raise a bare ValueError, so never convert them.
    if len(text.lstrip("-")) > 16:
        return _BigInt(text)
    return int(text)


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs_hook, parse_constant=_constant_hook, parse_int=_int_hook
)


def path_child(path: str, key: str | int) -> str:
    """JSON path of a member (``$.a.b``, ``$["x y"]``) or array element (``$[2]``)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENT.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=True)}]"


def _check_string(value: str, path: str, what: str) -> None:
    if _SURROGATE.search(value):
        raise LoneSurrogateError(
            f"lone surrogate in {what} at {path}, got an unpaired UTF-16 surrogate escape,"
            " expected a valid Unicode scalar value"
        )


def _walk(value: object, path: str, depth: int, limits: Limits) -> None:
    """Check a decoded value; the explicit depth bound keeps recursion finite."""
    if isinstance(value, dict):
        if depth >= limits.max_depth:
            raise NestingDepthError(
                f"nesting too deep at {path}, got more than {limits.max_depth} levels,"
                f" expected at most {limits.max_depth}"
            )
        for key, item in value.items():
            child = path_child(path, key)
            _check_string(key, child, "member name")
            _walk(item, child, depth + 1, limits)
    elif isinstance(value, list):
        if depth >= limits.max_depth:
            raise NestingDepthError(
                f"nesting too deep at {path}, got more than {limits.max_depth} levels,"
                f" expected at most {limits.max_depth}"
            )
        for index, item in enumerate(value):
            _walk(item, path_child(path, index), depth + 1, limits)
    elif isinstance(value, str):
        _check_string(value, path, "string")
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            shown = str(value) if len(str(value)) <= 40 else str(value)[:37] + "..."
            raise IntegerRangeError(
                f"integer out of range at {path}, got {shown},"
                f" expected at most {MAX_SAFE_INTEGER} in magnitude"
            )
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise NonFiniteNumberError(
                f"number not finite at {path}, got {value!r} after overflow,"
                " expected a finite IEEE 754 double"
            )
        # RFC 8785 spells integral doubles below 1e21 as plain integers; one beyond the
        # safe range would come back as an out-of-range integer, so refuse it now.
        if value.is_integer() and MAX_SAFE_INTEGER < abs(value) < 1e21:
            raise IntegerRangeError(
                f"integer-valued number out of range at {path}, got {value:.0f},"
                f" expected at most {MAX_SAFE_INTEGER} in magnitude"
            )
    elif isinstance(value, _Duplicate):
        raise DuplicateKeyError(
            f"duplicate member name at {path_child(path, value.key)},"
            f" got {json.dumps(value.key)} twice, expected unique names"
        )
    elif isinstance(value, _BigInt):
        shown = value.text if len(value.text) <= 40 else value.text[:37] + "..."
        raise IntegerRangeError(
            f"integer out of range at {path}, got {shown} ({len(value.text)} characters),"
            f" expected at most {MAX_SAFE_INTEGER} in magnitude"
        )
    elif isinstance(value, _Constant):
        raise NonFiniteNumberError(
            f"non-finite number at {path}, got {value.text}, expected a finite JSON number"
        )


def decode_utf8(data: bytes) -> str:
    """Decode strict UTF-8; a BOM or any invalid sequence is refused."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise InvalidUtf8Error("byte order mark at offset 0, got EF BB BF, expected JSON text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidUtf8Error(
            f"invalid UTF-8 at byte offset {exc.start}, got 0x{data[exc.start]:02x},"
            " expected a well-formed UTF-8 sequence"
        ) from None


_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")  # one opener and one closer byte to count
_STEP = [0] * 256
_STEP[ord("[")], _STEP[ord("]")] = 1, -1
_COUNTED = 1 << 20  # up to this size, counting the containers first is cheaper
_FIRST_SEGMENT = 1 << 12  # bytes scanned first; each next segment is twice as long ...
_LAST_SEGMENT = 1 << 20  # ... up to this
_NEAR = 32  # closer than this to the limit, depths are followed bracket by bracket ...
_WINDOW = 1 << 12  # ... over this many brackets at a time


def _passes(depth: int, brackets: bytes, limit: int) -> tuple[bool, int]:
    """(whether the depth passes ``limit`` in ``brackets``, the depth after them).

    ``brackets`` holds only ``[`` and ``]``. Far from the limit, a stretch as long as the
    room left cannot pass it, so only its count matters; near it, the running depth of
    a window is followed (``accumulate`` over ``map``: C-speed).
    """
    index = 0
    while index < len(brackets):
        room = limit - depth
        if room >= _NEAR:
            stretch = brackets[index : index + room]
        else:
            stretch = brackets[index : index + _WINDOW]
            running = itertools.accumulate(map(_STEP.__getitem__, stretch), initial=depth)
            if max(running) > limit:
                return True, depth
        depth += 2 * stretch.count(b"[") - len(stretch)
        index += len(stretch)
    return False, depth


def nesting_exceeds(data: bytes, limit: int) -> bool:
    """Whether the JSON text ``data`` has more than ``limit`` containers open at once.

    Brackets inside strings do not count. ``data`` is read in segments (4 KiB, then
    twice as long each time, up to 1 MiB), each cut down to the brackets outside strings
    with C-speed operations only, and the scan stops after the first segment that
    passes the limit: ``[[[[...`` of any length is refused after its first 4 KiB, and a
    document within the limit costs a few passes over its bytes. Text that is not JSON
    is left to the parser, which refuses it for what it is.
    """
    if len(data) <= _COUNTED and data.count(b"[") + data.count(b"{") <= limit:
        return False  # it cannot nest deeper than it has containers
    depth, pos, size = 0, 0, _FIRST_SEGMENT
    in_string = escaped = False  # where the previous segment ended
    while pos < len(data):
        segment = data[pos : pos + size]
        pos, size = pos + len(segment), min(2 * size, _LAST_SEGMENT)
        if escaped:  # the previous segment ended on a backslash escaping this byte
            segment = segment[1:]
        # Escapes pair left to right (as JSON reads them): without them, every quote
        # left opens or closes a string.
        plain = segment.replace(b"\\\\", b"").replace(b'\\"', b"")
        escaped = plain.endswith(b"\\")
        parts = plain.split(b'"')
        outside = b"".join(parts[1::2] if in_string else parts[::2])
        in_string ^= len(parts) % 2 == 0
        brackets = outside.translate(_AS_SQUARE, _NOT_BRACKET)
        opened = brackets.count(b"[")
        if depth + opened > limit:
            exceeded, depth = _passes(depth, brackets, limit)
            if exceeded:
                return True
        else:
            depth += 2 * opened - len(brackets)
    return False


def parse_strict(data: bytes, limits: Limits = DEFAULT_LIMITS) -> JSONValue:
    """Parse one JSON document under the strict rules in the module docstring."""
    if len(data) > limits.max_bytes:
        raise DocumentTooLargeError(
            f"document too large, got {len(data)} bytes, expected at most {limits.max_bytes}"
        )
    if nesting_exceeds(data, limits.max_depth):
        raise NestingDepthError(
            f"nesting too deep, got more than {limits.max_depth} levels,"
            f" expected at most {limits.max_depth}"
        )
    return _parse(data, limits)


def _parse(data: bytes, limits: Limits) -> JSONValue:
    """The parser proper (size and the nesting pre-scan already checked); its depth check
    is the definition ``nesting_exceeds`` is tested against."""
    text = decode_utf8(data)
    try:
        value, end = _DECODER.raw_decode(text, _skip_ws(text, 0))
    except RecursionError:
        raise NestingDepthError(
            f"nesting too deep, got more than the parser can hold,"
            f" expected at most {limits.max_depth} levels"
        ) from None
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}, got {exc.msg.lower()},"
            " expected a JSON value"
        ) from None
    rest = _skip_ws(text, end)
    if rest != len(text):
        line = text.count("\n", 0, rest) + 1
        raise TrailingDataError(
            f"trailing data at line {line} (char {rest}), got {text[rest : rest + 10]!r},"
            " expected end of document"
        )
    _walk(value, "$", 0, limits)
    checked: JSONValue = value  # json's decoder types nothing; _walk checked every part
    return checked


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\n\r":
        pos += 1
    return pos


def reference_canonical_bytes(value: object) -> bytes:
    """RFC 8785 bytes of an already-checked JSON value (the reference; see module doc)."""
    try:
        # rfc8785 judges whatever it is given: a value that is not I-JSON raises.
        return bytes(rfc8785.dumps(cast("JSONValue", value)))
    except (rfc8785.CanonicalizationError, ValueError, TypeError) as exc:
        raise CanonicalFormError(
            f"value cannot be canonicalized, got {exc}, expected I-JSON"
        ) from None


def legacy_bytes(value: object) -> bytes:
    """Upstream IDKMesh's serialization (sorted keys, compact, UTF-8)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def reference_float_hints(value: object) -> list[FloatHint]:
    """Paths of integral doubles (``1.0``, ``-0.0``) that RFC 8785 spells as integers.

    Each hint is the list of path segments followed by the Python ``repr`` of the number.
    Canonical bytes alone cannot tell ``1`` from ``1.0``; these hints let anyone
    recompute the legacy digest from the stored canonical bytes.
    """
    hints: list[FloatHint] = []

    def walk(node: object, path: list[str | int]) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                walk(item, [*path, key])
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, [*path, index])
        elif isinstance(node, float) and node.is_integer() and abs(node) < 1e21:
            hints.append([*path, repr(node)])

    walk(value, [])
    return hints
