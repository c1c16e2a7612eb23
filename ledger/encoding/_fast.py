"""Private fast paths to exactly the results of ``ledger.encoding.strict``, falling back to it.

Only ``ledger.encoding.canonical`` (the public entry point) calls this module.

``rfc8785`` is pure Python; the C ``json`` encoder is ~10x faster. For the values
``parse_strict`` returns, ``json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` writes the RFC 8785 form whenever these hold (checked per call):

1. Strings. Both escape exactly ``"``, ``\\`` and U+0000..U+001F (``\\b \\f \\n \\r \\t``
   short forms, otherwise ``\\u00xx`` with lowercase hex) and write every other
   character literally. A lone surrogate would be written raw by ``json`` but is
   refused by the final ``.encode("utf-8")``, which sends the value to the fallback.
2. Member order. ``sort_keys`` orders by code point, RFC 8785 by UTF-16 code unit.
   The two orders agree on strings without characters above U+FFFF; any such
   character anywhere in the output sends the value to the fallback.
3. Integers within +-(2**53 - 1) print as plain decimals in both; booleans and null
   print the same.
4. Floats. ``rfc8785`` formats ``str(f)``; when that text has no exponent it only drops
   a trailing ``.0``. So a float whose ``repr`` has no ``e`` is written as ``int(f)``
   when integral and as ``repr(f)`` (what ``json`` writes) otherwise. Floats whose
   ``repr`` has an exponent (below 1e-4 or at least 1e16) go to the fallback.

Anything else (other types, non-string keys, out-of-range numbers, malformed input)
goes to ``ledger.encoding.strict``, so results and errors are always exactly its own.
tests/test_fastcanon_differential.py checks the equality on the RFC 8785 vectors,
ES6 number vectors and generated values.

Bytes in (``parse_encode``, ``canonical_value``) are first tried with ``msgspec``,
whose C decoder and encoder are 2-5x faster than ``json``'s and write the same bytes
for the values admitted (``_MSGSPEC``). It has no per-member hooks, so what the ``json``
decoder's hooks check is established from the bytes (long integers, duplicate member
names: see ``_parse_encode_msgspec``) and by a float hook. Whatever that path cannot
vouch for goes to the ``json`` path, and from there to the reference.
tests/test_fast_msgspec.py checks the equality and which path is taken.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from ledger.encoding.strict import (
    DEFAULT_LIMITS,
    MAX_SAFE_INTEGER,
    Limits,
    legacy_bytes,
    nesting_exceeds,
    parse_strict,
    reference_canonical_bytes,
    reference_float_hints,
)
from ledger.errors import LedgerError

if TYPE_CHECKING:
    import msgspec

    from ledger.encoding.values import FloatHint, JSONPath, JSONValue

_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
# ``_MSGSPEC`` writes what ``_ENCODER`` writes, as UTF-8, for the values the ``msgspec``
# decoders below return: the same escapes for every code point (tested one by one),
# members sorted by code point, integers in decimal, and floats -- which the decoders'
# hooks admit only when this encoder's text is their ``repr``. It writes NaN/Infinity
# as ``null``; the hooks admit finite floats only.
#
# ``msgspec`` is imported once a process has handled ``_WARM_UP`` documents here (see
# ``_warm``): its import (~8 ms of CPU after ``typer``) outweighs what it saves on the
# few objects a read command re-derives. Both paths give the same results.
_MSGSPEC: msgspec.json.Encoder  # set by _load_msgspec
#: What a decoder built from untrusted bytes, or what a caller passed: not yet known to
#: be JSON. The walks below judge it by exact ``type()`` tests before anything is vouched.
Decoded = Any
# Decoders of untrusted bytes return Decoded: what they built is judged here before it is
# handed on as a JSONValue (the one boundary of this module, see ``_scan``).
_CANONICAL_MSGSPEC: msgspec.json.Decoder[Decoded]  # set by _load_msgspec
_ready = False
_WARM_UP = 32
_calls = 0
_NON_BMP = re.compile("[\U00010000-\U0010ffff]")
_WS = " \t\n\r"
_BOM = b"\xef\xbb\xbf"


class _Unsure(Exception):
    """Internal: the fast path cannot vouch for this value; use the reference path."""


def _pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Unsure  # duplicate member name: parse_strict reports it
    return obj


def _constant(_text: str) -> NoReturn:
    raise _Unsure  # NaN / Infinity: parse_strict reports it


_SCALARS = (str, bool, type(None))


def _scan(node: Decoded, depth: int, max_depth: int, keys: bool) -> bool:
    """Check a container; True when it holds a float. Raises ``_Unsure`` on anything odd.

    ``node`` is ``Decoded``: what a decoder built (or a caller passed), not yet known to be
    JSON; the exact ``type()`` tests below decide, faster than ``isinstance``.

    Mirrors the checks of ``strict.parse_strict`` (depth, integer range, finite
    floats, integral doubles beyond the safe range); strings are checked later by
    UTF-8 encoding. ``keys`` also demands exact ``str`` member names (arbitrary values).
    """
    if depth >= max_depth:
        raise _Unsure
    has_float = False
    if type(node) is dict:
        if keys:
            for key in node:
                if type(key) is not str:
                    raise _Unsure
        items: Decoded = node.values()
    else:
        items = node
    for item in items:
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                raise _Unsure
        elif kind is dict or kind is list:
            if _scan(item, depth + 1, max_depth, keys):
                has_float = True
        elif kind is float:
            has_float = True
            # Not finite, or integral beyond the safe range (parse_strict refuses those
            # below 1e21; the fallback handles 1e21 and above).
            if item != item or abs(item) > MAX_SAFE_INTEGER:
                raise _Unsure
        else:
            raise _Unsure
    return has_float


def _jcs_float(number: float) -> float | int:
    text = repr(number)
    if "e" in text or "n" in text:  # exponent form, inf, nan
        raise _Unsure
    return int(number) if number.is_integer() else number


def _jcs_floats(
    node: Decoded, path: list[str | int], hints: list[FloatHint], marks: _Marks | None = None
) -> Decoded:
    """``node`` with integral floats turned into ints (copy on write); ``_Unsure`` if unsafe.

    Returns ``node`` itself when nothing needs to change, so documents whose floats
    are all non-integral share one encoding for both byte forms. Each converted float
    is recorded in ``hints`` as ``reference_float_hints`` would list it (same order).
    With ``marks``, members and items become marker strings instead (see ``_encode``).
    ``node`` is ``Decoded`` for the reason ``_scan``'s is.
    """
    kind = type(node)
    new: Decoded
    if kind is float:
        new = _jcs_float(node)
        if new is not node:
            hints.append([*path, repr(node)])
        return new
    copy: Decoded = None
    pairs: Decoded = node.items() if kind is dict else enumerate(node) if kind is list else ()
    for key, value in pairs:
        vkind = type(value)
        if vkind is float:
            new = _jcs_float(value)
            if new is not value:
                hints.append([*path, key, repr(value)])
                if marks is not None:
                    new = _mark(value, marks)
        elif vkind is dict or vkind is list:
            path.append(key)
            new = _jcs_floats(value, path, hints, marks)
            path.pop()
        else:
            continue
        if new is not value:
            if copy is None:
                copy = dict(node) if kind is dict else list(node)
            copy[key] = new
    return node if copy is None else copy


# Integral floats are the only difference between the two byte forms. Instead of a
# second encode, each distinct one (by ``repr``) is replaced by a marker string, the
# marked value is encoded once, and each marker's JSON text is then replaced by the
# float's ``repr`` (legacy) or by the integer (RFC 8785). A marker is a NUL-delimited
# number, written ``"\u0000N\u0000"``; it is used only when its text occurs in the
# output exactly as often as it was placed (an input string could spell it too: then
# the two encodes decide).
_Marks = dict[str, tuple[str, int]]  # float repr -> (marker string, times placed)


def _mark(number: float, marks: _Marks) -> str:
    literal = repr(number)
    marker, placed = marks.get(literal) or (f"\x00{len(marks)}\x00", 0)
    marks[literal] = (marker, placed + 1)
    return marker


def _encode(
    value: JSONValue, has_float: bool
) -> tuple[bytes, bytes | None, list[FloatHint] | None]:
    """(legacy bytes, canonical bytes, float hints); None where the fast path cannot vouch."""
    kind = type(value)
    if not has_float or (kind is not dict and kind is not list):
        return _encode_twice(value, has_float)
    hints: list[FloatHint] = []
    marks: _Marks = {}
    try:
        marked = _jcs_floats(value, [], hints, marks)
    except _Unsure:
        return _ENCODER.encode(value).encode("utf-8"), None, None
    text = _ENCODER.encode(marked)
    legacy_text = canonical_text = text
    for literal, (marker, placed) in marks.items():
        token = '"\\u0000' + marker[1:-1] + '\\u0000"'
        if text.count(token) != placed:
            return _encode_twice(value, has_float)
        legacy_text = legacy_text.replace(token, literal)
        canonical_text = canonical_text.replace(token, str(int(float(literal))))
    legacy = legacy_text.encode("utf-8")  # UnicodeEncodeError on lone surrogates
    if not text.isascii() and _NON_BMP.search(text):
        return legacy, None, hints
    if not marks:
        return legacy, legacy, hints
    return legacy, canonical_text.encode("utf-8"), hints


def _encode_twice(
    value: JSONValue, has_float: bool
) -> tuple[bytes, bytes | None, list[FloatHint] | None]:
    """``_encode`` by two encodes (legacy, then integral floats as ints): the reference
    for the marker path, and what it falls back to."""
    text = _ENCODER.encode(value)
    legacy = text.encode("utf-8")  # UnicodeEncodeError on lone surrogates
    if not has_float:
        hints: list[FloatHint] | None = []
        fixed = value
    else:
        hints = []
        try:
            fixed = _jcs_floats(value, [], hints)
        except _Unsure:
            return legacy, None, None
    if not text.isascii() and _NON_BMP.search(text):
        return legacy, None, hints
    if fixed is value:
        return legacy, legacy, hints
    return legacy, _ENCODER.encode(fixed).encode("utf-8"), hints


def canonicalize(value: object) -> bytes:
    """RFC 8785 bytes of ``value``: identical to ``reference_canonical_bytes`` (errors too)."""
    given: Decoded = value  # anything a caller passes: the exact type() tests below judge it
    kind = type(given)
    try:
        if kind is dict or kind is list:
            has_float = _scan(given, 0, 1 << 30, True)
        elif kind is float:
            has_float = True
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= given <= MAX_SAFE_INTEGER:
                raise _Unsure
            has_float = False
        elif kind in _SCALARS:
            has_float = False
        else:
            raise _Unsure
        _, data, _ = _encode(given, has_float)
    except (_Unsure, ValueError, TypeError, RecursionError):
        data = None
    return data if data is not None else reference_canonical_bytes(value)


@dataclass(frozen=True, slots=True)
class Encoded:
    """A strictly parsed document with its RFC 8785 bytes and upstream legacy bytes.

    ``legacy`` is ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` in UTF-8 (``ledger.encoding.strict.legacy_bytes``); it is the same
    object as ``canonical`` when the two byte strings are equal by construction.
    """

    value: JSONValue
    canonical: bytes
    legacy: bytes
    has_float: bool
    float_hints: list[FloatHint] | None = None  # as reference_float_hints; None: unknown


class _Numbers(threading.local):
    """Per-thread decoder whose number hooks check every number as it is parsed.

    They replace a second walk over the parsed value (``_scan``): an integer outside
    +-(2**53 - 1), a float that is not finite or whose magnitude exceeds 2**53 - 1 is
    ``_Unsure`` (the reference decides). ``floats`` records that a float was parsed;
    ``odd`` that one is integral or has an exponent ``repr`` -- only then can the RFC
    8785 bytes differ from ``json``'s, so only then is ``_jcs_floats`` needed.
    """

    def __init__(self) -> None:
        self.floats = False
        self.odd = False
        self.integral = 0  # integral floats seen by ``_fast_float``
        # Where the last documents held integral floats (``_fix_known``), newest first.
        self.paths: list[tuple[JSONPath, ...]] = []
        self.decoder = json.JSONDecoder(
            object_pairs_hook=_pairs,
            parse_float=self._float,
            parse_int=_safe_int,
            parse_constant=_constant,
        )
        self.fast: msgspec.json.Decoder[Decoded] | None = None  # made by fast_decoder

    def _float(self, text: str) -> float:
        number = float(text)
        if not abs(number) <= MAX_SAFE_INTEGER:  # also NaN and infinities
            raise _Unsure
        self.floats = True
        if not self.odd and (number.is_integer() or "e" in repr(number)):
            self.odd = True
        return number

    def fast_decoder(self) -> msgspec.json.Decoder[Decoded]:
        import msgspec

        decoder = self.fast = msgspec.json.Decoder(float_hook=self._fast_float)
        return decoder

    def _fast_float(self, text: str) -> float:
        """``_float`` for the ``msgspec`` decoder, which also vouches for its encoder.

        A float whose ``msgspec`` text is not its ``repr`` (what ``json`` writes) is
        ``_Unsure``: exponent forms (below 1e-4 or from 1e16 on, where ``msgspec``
        writes ``0.00001`` or ``1e16``) and anything else. So the ``msgspec`` encoding
        of a value decoded here is ``json``'s, number for number.
        """
        number = float(text)
        if not abs(number) <= MAX_SAFE_INTEGER:  # also NaN and infinities
            raise _Unsure
        shown = repr(number)
        if "e" in shown or _MSGSPEC.encode(number) != shown.encode():
            raise _Unsure
        self.floats = True
        if number.is_integer():
            self.integral += 1
        return number


def _safe_int(text: str) -> int:
    number = int(text)
    if not -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
        raise _Unsure
    return number


_NUMBERS = _Numbers()


def parse_encode(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Encoded:
    """``parse_strict`` + ``canonicalize`` + ``legacy_bytes`` in one pass.

    Same value, same bytes and same exceptions as the reference functions: any
    input the fast path does not fully vouch for is handed to them. Two fast paths are
    tried in turn: ``msgspec`` (``_parse_encode_msgspec``) and the ``json`` decoder
    whose hooks check every number and member name (``_parse_encode_json``); each
    raises ``_Unsure`` where it cannot vouch, and the reference decides last.
    """
    if len(data) > limits.max_bytes or data.startswith(_BOM):
        return _reference(data, limits)
    if nesting_exceeds(data, limits.max_depth):
        return _reference(data, limits)  # refused there, before any parsing
    numbers = _NUMBERS
    numbers.floats = numbers.odd = False
    numbers.integral = 0
    try:
        if not (_ready or _warm()):
            raise _Unsure
        value, legacy, canonical, hints = _parse_encode_msgspec(data, numbers)
    except _MSGSPEC_ERRORS:
        numbers.floats = numbers.odd = False
        try:
            value, legacy, canonical, hints = _parse_encode_json(data, numbers)
        except (_Unsure, ValueError, TypeError, RecursionError):
            # ValueError covers JSONDecodeError, UnicodeDecodeError and UnicodeEncodeError.
            return _reference(data, limits)
    if canonical is None:
        canonical = reference_canonical_bytes(value)
    return Encoded(value, canonical, legacy, numbers.floats, hints)


# value, legacy, canonical, hints
_Parsed = tuple["JSONValue", bytes, bytes | None, list["FloatHint"] | None]


# ``_parse_encode_msgspec`` establishes without hooks what the ``json`` decoder's hooks
# establish, from the bytes:
# - Integers beyond +-(2**53 - 1) have 16 or more digits, and an integer's first digit
#   follows ``[``, ``,``, ``:``, ``-``, whitespace or the start of the text. ``_RUNS``
#   maps digits to ``0``, those bytes to a space and all others to ``x``, so such an
#   integer leaves `` 0000000000000000`` (or starts the text with 16 zeros). Digits in
#   strings may hit too (after a space or a colon); then the ``json`` path decides.
# - Duplicate member names. Without ``\u003a``-style escapes in the input (``:`` is
#   U+003A), every ``:`` of the input is a member separator or a ``:`` in a string,
#   and the re-encoding writes one per member kept and every ``:`` of the strings kept
#   (neither encoder escapes ``:``). A dropped duplicate removes its separator, so the
#   output has exactly as many ``:`` as the input iff no member name repeats.
# - Floats: the decoder's ``float_hook`` (``_Numbers._fast_float``).
_RUNS = bytes(
    0x30 if 0x30 <= c <= 0x39 else 0x20 if c in b"[,:- \t\n\r" else 0x78 for c in range(256)
)
_LONG_RUN = b"0" * 16
_COLON_ESCAPE = b"\\u003"  # \u003a and \u003A (and their neighbours, conservatively)
_BELOW_NON_BMP = bytes(range(0xF0))  # UTF-8 lead bytes of U+10000 and above: F0..F4


def _long_integer(data: bytes) -> bool:
    """True when ``data`` may hold an integer of 16 or more digits (see ``_RUNS``)."""
    runs = data.translate(_RUNS)
    at = runs.find(_LONG_RUN)
    while at >= 0:
        if at == 0 or runs[at - 1] == 0x20:
            return True
        # Not a run's first digit, or one after another byte: no run starts inside
        # these 16 digits, so look on after them.
        at = runs.find(_LONG_RUN, at + 16)
    return False


def _non_bmp(data: bytes) -> bool:
    """True when the UTF-8 ``data`` holds a character above U+FFFF."""
    return not data.isascii() and bool(data.translate(None, _BELOW_NON_BMP))


def _parse_encode_msgspec(data: bytes, numbers: _Numbers) -> _Parsed:
    """``parse_encode`` through ``msgspec``'s decoder and encoder; ``_Unsure`` (or any
    decode error) where the facts above are not established."""
    if _COLON_ESCAPE in data or _long_integer(data):
        raise _Unsure
    value = (numbers.fast or numbers.fast_decoder()).decode(data)
    legacy, canonical, hints = _encode_msgspec(value, numbers)
    if legacy.count(b":") != data.count(b":"):
        raise _Unsure  # a duplicate member name: the reference reports it
    return value, legacy, canonical, hints


def _encode_msgspec(
    value: JSONValue, numbers: _Numbers
) -> tuple[bytes, bytes | None, list[FloatHint]]:
    """``_encode_twice`` with the ``msgspec`` encoder, for a value the ``msgspec`` decoder
    just returned (``numbers`` as its hook left them).

    Two encodes of ~5 us cost less here than ``_encode``'s markers (one encode, then a
    count and a replacement per marker): the value itself gives the legacy bytes, the
    value with its integral floats as integers the RFC 8785 bytes.
    """
    count = numbers.integral
    if not count:
        out = _MSGSPEC.encode(value)
        return out, None if _non_bmp(out) else out, []
    kind = type(value)
    if kind is not dict and kind is not list:
        raise _Unsure
    known = _fix_known(value, count, numbers.paths)
    if known is None:
        hints: list[FloatHint] = []
        fixed = _jcs_floats(value, [], hints)
        _remember(numbers.paths, tuple(tuple(hint[:-1]) for hint in hints))
    else:
        fixed, hints = known
    legacy = _MSGSPEC.encode(value)
    if _non_bmp(legacy):
        return legacy, None, hints
    return legacy, _MSGSPEC.encode(fixed), hints


_PATHS_KEPT = 4


def _remember(paths: list[tuple[JSONPath, ...]], found: tuple[JSONPath, ...]) -> None:
    if found in paths:
        paths.remove(found)
    paths.insert(0, found)
    del paths[_PATHS_KEPT:]


def _fix_known(
    value: JSONValue, count: int, candidates: list[tuple[JSONPath, ...]]
) -> tuple[JSONValue, list[FloatHint]] | None:
    """``_jcs_floats(value, [], hints)`` and its hints without a walk, when the integral
    floats are where they were in a recent document; None otherwise (then walk).

    ``count`` is the number of integral floats the decoder's hook saw, so when ``count``
    distinct paths of a candidate all lead to integral floats, those are all of them.
    They are then put in document order (the order of the walk: position by position,
    a member's position in its object, an item's index), and exactly the containers
    on those paths are copied, as ``_jcs_floats`` copies them.
    """
    for paths in candidates:
        if len(paths) != count:
            continue
        located = _locate(value, paths)
        if located is None:
            continue
        hints: list[FloatHint] = []
        # Walked by ``type()`` tests ``_locate`` already passed (``Decoded``: see ``_scan``).
        root: Decoded = dict(value) if type(value) is dict else list(value)  # type: ignore[arg-type]
        copies: dict[JSONPath, Decoded] = {}
        for _, path, number in located:
            hints.append([*path, repr(number)])
            node = root
            for depth in range(len(path) - 1):
                prefix = path[: depth + 1]
                copy = copies.get(prefix)
                if copy is None:
                    child = node[path[depth]]
                    copy = copies[prefix] = dict(child) if type(child) is dict else list(child)
                    node[path[depth]] = copy
                node = copy
            node[path[-1]] = int(number)
        return root, hints
    return None


def _locate(
    value: JSONValue, paths: tuple[JSONPath, ...]
) -> list[tuple[list[int], JSONPath, float]] | None:
    """(document position, path, float) of each path, sorted by position; None unless
    every path leads to an integral float."""
    located = []
    for path in paths:
        node: Decoded = value  # walked by the exact type() tests below (see ``_scan``)
        position = []
        for key in path:
            kind = type(node)
            if kind is dict and type(key) is str and key in node:
                position.append(list(node).index(key) if len(paths) > 1 else 0)
            elif kind is list and type(key) is int and 0 <= key < len(node):
                position.append(key)
            else:
                return None
            node = node[key]
        if type(node) is not float or not node.is_integer():
            return None
        located.append((position, path, node))
    located.sort(key=_first)
    return located


def _first(item: tuple[list[int], JSONPath, float]) -> list[int]:
    return item[0]


def _parse_encode_json(data: bytes, numbers: _Numbers) -> _Parsed:
    """``parse_encode`` through the C ``json`` decoder with checking hooks."""
    text = data.decode("utf-8")
    start = len(text) - len(text.lstrip(_WS))
    value, end = numbers.decoder.raw_decode(text, start)
    if end != len(text) and text[end:].strip(_WS):
        raise _Unsure
    # Without an integral or exponent-form float, RFC 8785 writes what ``json``
    # writes: one encode gives both byte forms and there are no float hints.
    legacy, canonical, hints = _encode(value, numbers.odd)
    return value, legacy, canonical, hints


def _reference(data: bytes, limits: Limits) -> Encoded:
    """The slow path: the reference functions decide, and raise, everything."""
    value = parse_strict(data, limits)
    return Encoded(value, reference_canonical_bytes(value), legacy_bytes(value), _has_float(value))


def _has_float(node: object) -> bool:
    if isinstance(node, float):
        return True
    if isinstance(node, dict):
        return any(_has_float(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_float(v) for v in node)
    return False


def is_canonical(data: bytes, limits: Limits = DEFAULT_LIMITS) -> bool:
    """True iff ``data`` parses strictly and is its own RFC 8785 form (no exceptions)."""
    try:
        return parse_encode(data, limits).canonical == data
    except LedgerError:
        return False


def float_hints(value: object) -> list[FloatHint]:
    """Same list as ``reference_float_hints`` (same order), without per-node copies."""
    hints: list[FloatHint] = []
    path: list[str | int] = []

    def hint(number: float, last: str | int | None) -> None:
        if number.is_integer() and abs(number) < 1e21:
            hints.append([*path, last, repr(number)] if last is not None else [repr(number)])

    def walk(node: Decoded) -> None:
        pairs: Decoded = node.items() if type(node) is dict else enumerate(node)
        for key, item in pairs:
            kind = type(item)
            if kind is float:
                hint(item, key)
            elif kind is dict or kind is list:
                path.append(key)
                walk(item)
                path.pop()

    if type(value) is float:
        hint(value, None)
    elif type(value) is dict or type(value) is list:
        walk(value)
    else:
        return reference_float_hints(value)
    return hints


def _canonical_float(text: str) -> float:
    number = float(text)
    shown = repr(number)
    # RFC 8785 writes these differently from ``json`` (exponent form, inf/nan) or as
    # integers (integral doubles): such bytes are not vouched for here.
    if "e" in shown or "n" in shown or number.is_integer():
        raise _Unsure
    return number


def _canonical_int(text: str) -> int:
    number = int(text)
    if not -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
        raise _Unsure
    return number


_CANONICAL_DECODER = json.JSONDecoder(
    parse_float=_canonical_float, parse_int=_canonical_int, parse_constant=_constant
)


def _canonical_float_text(text: str) -> float:
    """``float_hook`` of ``canonical_value``'s ``msgspec`` decoder.

    Admits a float only when ``text`` is its ``repr`` and RFC 8785 writes it as ``json``
    does (not integral, no exponent). Then, when the re-encoding equals the input, the
    encoder wrote this float as its ``repr`` -- as ``json`` does.
    """
    number = float(text)
    if text != repr(number) or "e" in text or number.is_integer():
        raise _Unsure  # also NaN/Infinity (their repr has no digits) and all spellings
    return number


# What the ``msgspec`` paths catch; ``_load_msgspec`` adds ``msgspec.MsgspecError``.
_MSGSPEC_ERRORS: tuple[type[Exception], ...] = (
    _Unsure,
    ValueError,
    TypeError,
    KeyError,
    RecursionError,
)


def _warm() -> bool:
    """Count a document; once ``_WARM_UP`` were handled, load ``msgspec`` (True)."""
    global _calls
    _calls += 1
    if _calls <= _WARM_UP:
        return False
    _load_msgspec()
    return True


def _load_msgspec() -> None:
    global _MSGSPEC, _CANONICAL_MSGSPEC, _MSGSPEC_ERRORS, _ready
    import msgspec

    _MSGSPEC = msgspec.json.Encoder(order="sorted")
    _CANONICAL_MSGSPEC = msgspec.json.Decoder(float_hook=_canonical_float_text)
    _MSGSPEC_ERRORS = (*_MSGSPEC_ERRORS, msgspec.MsgspecError)
    _ready = True


def legacy_with_doubles(
    data: bytes, value: JSONValue, applied: JSONValue, texts: list[str]
) -> bytes | None:
    """``legacy_bytes(applied)``, or None when not established here (encode it then).

    Preconditions (the caller's): ``data == legacy_bytes(value)``, and ``applied`` is
    ``value`` with some integers replaced by the equal doubles whose ``repr`` is each of
    ``texts`` (checked float hints). Then ``json`` writes ``applied`` as ``data`` with
    those integers' tokens replaced by the ``texts``; ``_MSGSPEC`` writes it the same
    when it writes ``value`` as ``data`` and each double as its text (both checked
    here), since both encoders write a container from its members' texts alone. One C
    pass instead of rebuilding the document's text in Python.
    """
    if not (_ready or _warm()):
        return None
    try:
        if any(_MSGSPEC.encode(float(text)) != text.encode() for text in texts):
            return None
        if _MSGSPEC.encode(value) != data:
            return None
        return _MSGSPEC.encode(applied)
    except _MSGSPEC_ERRORS:
        return None
    except OverflowError:  # an integer msgspec does not write
        return None


def canonical_value(data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[bool, JSONValue]:
    """``(True, value)`` when ``data`` is established, quickly, to be its own RFC 8785
    form (then ``value`` is what ``parse_strict`` returns); ``(False, None)`` when that
    is not established here (use ``parse_encode``, which decides).

    The value is re-written and the text must come back unchanged: duplicate member
    names, unsorted members, whitespace and any other spelling come back different.
    The re-writing is ``json``'s (through ``msgspec``, see ``_MSGSPEC``), and RFC 8785's
    wherever the checks here hold: the decoder's float hook refuses what would be
    written the same but not as RFC 8785 writes it (integral or exponent-form doubles,
    NaN/Infinity), integers of 16 digits or more are left out (``_long_integer``), depth
    and size are checked against ``limits``, and text with characters above U+FFFF
    (where the two member orders may differ) is left out.
    """
    if len(data) > limits.max_bytes or nesting_exceeds(data, limits.max_depth):
        return False, None
    if not (_ready or _warm()) or _long_integer(data):
        return _canonical_value_json(data)
    try:
        value = _CANONICAL_MSGSPEC.decode(data)
    except _MSGSPEC_ERRORS:
        return _canonical_value_json(data)
    if _MSGSPEC.encode(value) != data or _non_bmp(data):
        return False, None
    return True, value


def _canonical_value_json(data: bytes) -> tuple[bool, JSONValue]:
    """``canonical_value`` by the C ``json`` decoder, whose hooks check every number
    (limits already checked)."""
    try:
        text = data.decode("utf-8")
        value = _CANONICAL_DECODER.decode(text)
        if _ENCODER.encode(value) != text:
            return False, None
    except (_Unsure, ValueError, TypeError, RecursionError):
        return False, None
    if not text.isascii() and _NON_BMP.search(text):
        return False, None
    return True, value
