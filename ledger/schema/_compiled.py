"""Private: schemas compiled to plain Python predicates, a fast "valid" verdict only.

Only ``ledger.schema.validation`` (the public entry point) calls this module.

``jsonschema`` walks a schema generically and costs ~1 ms per WorkUnit; the closures
built here cost a few tens of microseconds. They are used only to answer "valid":

- ``fast_check(kind, version, value)`` is True only when ``jsonschema``'s
  ``Draft202012Validator`` (as configured in ``ledger.schema.loader``) accepts ``value``.
  False means "not shown valid": the caller asks ``jsonschema``, which decides and
  explains. So a gap here costs time, never correctness.
- Every supported keyword is implemented with ``jsonschema``'s own semantics (type
  checks, ``_json_equal`` (jsonschema's ``equal``: True is not 1) for ``enum``/``const``/
  ``uniqueItems``, ``re.search`` for
  ``pattern``, 2020-12 ``items``/``$ref``), exactly, because ``not`` and ``if`` need
  exact sub-verdicts. A schema using anything else (unknown keywords, remote or
  nested-``$id`` references, ``prefixItems``, ``patternProperties``, asserted
  ``format``) is not compiled at all and ``fast_check`` always answers False.
- Values of types JSON cannot produce are answered False.

tests/test_fastcanon_schema.py compares the verdicts with ``jsonschema`` on the
reference corpus, generated documents and many mutations of them.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from ledger.schema.loader import load_schema, validator

Check = Callable[[Any], bool]

_NATIVE = frozenset({dict, list, str, int, float, bool, type(None)})

# Keywords with no effect on validity (format only while no format checker is set).
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$comment",
        "$defs",
        "title",
        "description",
        "examples",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)


class Unsupported(Exception):
    """The schema uses something this compiler does not implement exactly."""


def _is_type(name: str) -> Check:
    if name == "object":
        return lambda x: type(x) is dict
    if name == "array":
        return lambda x: type(x) is list
    if name == "string":
        return lambda x: type(x) is str
    if name == "boolean":
        return lambda x: type(x) is bool
    if name == "null":
        return lambda x: x is None
    if name == "number":
        return lambda x: type(x) is int or type(x) is float
    if name == "integer":
        return lambda x: type(x) is int or (type(x) is float and x.is_integer())
    raise Unsupported(f"type {name!r}")


_PY_TYPES: dict[str, type] = {"string": str, "boolean": bool, "object": dict, "array": list}


def _always(_x: Any) -> bool:
    return True


def _never(_x: Any) -> bool:
    return False


def _any_of(tests: list[Check]) -> Check:
    options = tuple(tests)
    return lambda x: any(t(x) for t in options)


def _number(x: Any) -> bool:
    return type(x) is int or type(x) is float


def _bound_check(ok: Callable[[Any, Any], bool], bound: Any) -> Check:
    # jsonschema applies numeric bounds to numbers only (booleans are not numbers).
    def check_bound(x: Any) -> bool:
        return bool(ok(x, bound)) if _number(x) else type(x) in _NATIVE

    return check_bound


class _Compiler:
    """Compiles one schema document; ``$ref`` targets are compiled once, lazily bound."""

    def __init__(self, root: Any, formats_asserted: bool) -> None:
        self.root = root
        self.formats_asserted = formats_asserted
        self.refs: dict[str, Check] = {}
        # Checks that are exactly "is of this Python type" (inlined by callers).
        self.simple: dict[Check, type | None] = {}

    def ref(self, pointer: str) -> Check:
        if pointer in self.refs:
            return self.refs[pointer]
        if pointer != "#" and not pointer.startswith("#/"):
            raise Unsupported(f"$ref {pointer!r}")
        target = self.root
        for raw in pointer[2:].split("/") if pointer != "#" else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if "%" in part:
                raise Unsupported(f"$ref {pointer!r}")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise Unsupported(f"$ref {pointer!r}")
        if isinstance(target, dict) and "$id" in target:
            raise Unsupported("$ref into a resource with its own $id")
        cell: list[Check] = []
        self.refs[pointer] = lambda x: cell[0](x)
        cell.append(self.compile(target))
        self.refs[pointer] = cell[0]
        return cell[0]

    def compile(self, schema: Any, top: bool = False) -> Check:
        if schema is True:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, dict):
            raise Unsupported(f"schema of type {type(schema).__name__}")
        if "$id" in schema and not top:
            raise Unsupported("nested $id")
        checks: list[Check] = []
        handled = set(_ANNOTATIONS) | {"$id", "type"}
        if "format" in schema:
            if self.formats_asserted:
                raise Unsupported("asserted format")
            handled.add("format")

        names = schema.get("type", [])
        names = names if isinstance(names, list) else [names]
        only = names[0] if len(names) == 1 else None
        # A single container/string type is folded into that kind's check below.
        obj = self._object_check(schema, handled, only == "object")
        arr = self._array_check(schema, handled, only == "array")
        text = self._string_check(schema, handled, only == "string")
        folded = (
            (only == "object" and obj is not None)
            or (only == "array" and arr is not None)
            or (only == "string" and text is not None)
        )
        if names and not folded:
            tests = [_is_type(name) for name in names]
            checks.append(tests[0] if len(tests) == 1 else _any_of(tests))
        checks.extend(c for c in (obj, arr, text) if c is not None)
        checks.extend(self._number_checks(schema, handled))
        checks.extend(self._applicators(schema, handled))

        extra = set(schema) - handled
        if extra:
            raise Unsupported(f"keywords {sorted(extra)}")
        if not checks:
            return _always
        if len(checks) == 1:
            if not folded and set(schema) - _ANNOTATIONS - {"$id", "format"} == {"type"}:
                self.simple[checks[0]] = _PY_TYPES.get(only or "")
            return checks[0]
        if len(checks) == 2:
            first, second = checks
            return lambda x: first(x) and second(x)
        all_checks = tuple(checks)

        def check_all(x: Any) -> bool:
            # A plain loop: ``all()`` over a generator costs a frame per element.
            for check in all_checks:  # noqa: SIM110 (see above)
                if not check(x):
                    return False
            return True

        return check_all

    # -- objects: required + properties + additionalProperties in one pass ----------
    def _object_check(
        self, schema: dict[str, Any], handled: set[str], strict: bool
    ) -> Check | None:
        if "patternProperties" in schema:
            raise Unsupported("patternProperties")
        keys: tuple[str, ...] = ("required", "properties", "additionalProperties")
        keys += ("minProperties", "maxProperties", "dependentRequired", "propertyNames")
        if not any(k in schema for k in keys):
            return None
        handled.update(keys)
        required = tuple(schema.get("required", ()))
        props = {name: self.compile(sub) for name, sub in schema.get("properties", {}).items()}
        # Members whose schema is just {"type": <str|bool|object|array>}: tested inline.
        inline = {name: t for name, c in props.items() if (t := self.simple.get(c)) is not None}
        additional = schema.get("additionalProperties", True)
        extra: Check | None = None if additional is True else self.compile(additional)
        min_p = schema.get("minProperties")
        max_p = schema.get("maxProperties")
        dependent = {k: tuple(v) for k, v in schema.get("dependentRequired", {}).items()}
        names = self.compile(schema["propertyNames"]) if "propertyNames" in schema else None
        get = props.get
        get_inline = inline.get
        # One lookup per member: (Python type tested inline, or None; its check).
        member = {name: (inline.get(name), sub) for name, sub in props.items()}.get

        def check_plain(x: Any) -> bool:
            """``check_object`` for the common case: no ``propertyNames``, no size or
            ``dependentRequired`` bounds."""
            if type(x) is not dict:
                return not strict and type(x) in _NATIVE
            for name in required:
                if name not in x:
                    return False
            for key, value in x.items():
                found = member(key)
                if found is None:
                    if extra is not None and not extra(value):
                        return False
                    continue
                wanted, sub = found
                if wanted is not None:
                    if type(value) is not wanted:
                        return False
                elif not sub(value):
                    return False
            return True

        if names is None and min_p is None and max_p is None and not dependent:
            return check_plain

        def check_object(x: Any) -> bool:
            if type(x) is not dict:
                return not strict and type(x) in _NATIVE
            for name in required:
                if name not in x:
                    return False
            for key, value in x.items():
                wanted = get_inline(key)
                if wanted is not None:
                    if type(value) is not wanted:
                        return False
                else:
                    sub = get(key)
                    if sub is None:
                        if extra is not None and not extra(value):
                            return False
                    elif not sub(value):
                        return False
                if names is not None and not names(key):
                    return False
            if min_p is not None and len(x) < min_p:
                return False
            if max_p is not None and len(x) > max_p:
                return False
            for key, needs in dependent.items():
                if key in x and any(n not in x for n in needs):
                    return False
            return True

        return check_object

    def _array_check(self, schema: dict[str, Any], handled: set[str], strict: bool) -> Check | None:
        if "prefixItems" in schema or "contains" in schema:
            raise Unsupported("prefixItems/contains")
        keys = ("items", "minItems", "maxItems", "uniqueItems")
        if not any(k in schema for k in keys):
            return None
        handled.update(keys)
        item = self.compile(schema["items"]) if "items" in schema else None
        item_type = self.simple.get(item) if item is not None else None
        low = schema.get("minItems")
        high = schema.get("maxItems")
        unique = bool(schema.get("uniqueItems", False))

        def check_array(x: Any) -> bool:
            if type(x) is not list:
                return not strict and type(x) in _NATIVE
            if low is not None and len(x) < low:
                return False
            if high is not None and len(x) > high:
                return False
            if item_type is not None:
                for element in x:
                    if type(element) is not item_type:
                        return False
            elif item is not None:
                for element in x:
                    if not item(element):
                        return False
            return not unique or _unique(x)

        return check_array

    def _string_check(
        self, schema: dict[str, Any], handled: set[str], strict: bool
    ) -> Check | None:
        keys = ("minLength", "maxLength", "pattern")
        if not any(k in schema for k in keys):
            return None
        handled.update(keys)
        low = schema.get("minLength")
        high = schema.get("maxLength")
        search = re.compile(schema["pattern"]).search if "pattern" in schema else None

        def check_string(x: Any) -> bool:
            if type(x) is not str:
                return not strict and type(x) in _NATIVE
            if low is not None and len(x) < low:
                return False
            if high is not None and len(x) > high:
                return False
            return search is None or search(x) is not None

        return check_string

    def _number_checks(self, schema: dict[str, Any], handled: set[str]) -> list[Check]:
        out: list[Check] = []
        bounds: tuple[tuple[str, Callable[[Any, Any], bool]], ...] = (
            ("minimum", operator.ge),
            ("maximum", operator.le),
            ("exclusiveMinimum", operator.gt),
            ("exclusiveMaximum", operator.lt),
        )
        for name, ok in bounds:
            if name in schema:
                handled.add(name)
                bound = schema[name]
                if not _number(bound):
                    raise Unsupported(f"{name} {bound!r}")
                out.append(_bound_check(ok, bound))
        if "const" in schema:
            handled.add("const")
            const = schema["const"]
            if type(const) is str:
                out.append(lambda x: x == const)
            else:
                out.append(lambda x: _json_equal(x, const))
        if "enum" in schema:
            handled.add("enum")
            options = list(schema["enum"])
            strings = frozenset(o for o in options if type(o) is str)
            others = [o for o in options if type(o) is not str]

            def check_enum(x: Any) -> bool:
                if type(x) is str:
                    return x in strings
                return any(_json_equal(o, x) for o in others)

            out.append(check_enum)
        return out

    def _applicators(self, schema: dict[str, Any], handled: set[str]) -> list[Check]:
        out: list[Check] = []
        if "$ref" in schema:
            handled.add("$ref")
            pointer = schema["$ref"]
            if not isinstance(pointer, str):
                raise Unsupported("$ref")
            out.append(self.ref(pointer))
        if "allOf" in schema:
            handled.add("allOf")
            subs = tuple(self.compile(s) for s in schema["allOf"])
            out.append(lambda x: all(s(x) for s in subs))
        if "anyOf" in schema:
            handled.add("anyOf")
            any_subs = tuple(self.compile(s) for s in schema["anyOf"])
            out.append(lambda x: any(s(x) for s in any_subs))
        if "oneOf" in schema:
            handled.add("oneOf")
            one_subs = tuple(self.compile(s) for s in schema["oneOf"])
            out.append(lambda x: sum(1 for s in one_subs if s(x)) == 1)
        if "not" in schema:
            handled.add("not")
            negated = self.compile(schema["not"])
            out.append(lambda x: not negated(x))
        if "if" in schema:
            handled.update(("if", "then", "else"))
            cond = self.compile(schema["if"])
            then = self.compile(schema.get("then", True))
            other = self.compile(schema.get("else", True))
            out.append(lambda x: then(x) if cond(x) else other(x))
        else:
            # Without "if", jsonschema ignores "then"/"else".
            handled.update(("then", "else"))
        return out


_TRUE, _FALSE = object(), object()


def _unbool(value: object) -> object:
    return _TRUE if value is True else _FALSE if value is False else value


def _json_equal(one: object, two: object) -> bool:
    """jsonschema's ``equal``: ``==`` except that booleans never equal numbers, recursively."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(
            _json_equal(a, b) for a, b in zip(one, two, strict=True)
        )
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(
            key in two and _json_equal(value, two[key]) for key, value in one.items()
        )
    return bool(_unbool(one) == _unbool(two))


def _unique(x: list[Any]) -> bool:
    # Distinct under hash/== implies distinct under ``_json_equal`` (which only splits True
    # from 1 further). Otherwise compare every pair: that finds every duplicate
    # jsonschema's ``uniq`` finds (it compares a subset of the pairs), so "unique" here
    # implies "unique" there, which is all a fast "valid" verdict needs.
    try:
        if len(set(x)) == len(x):
            return True
    except TypeError:
        pass
    seen: list[object] = []
    for item in x:
        if any(_json_equal(other, item) for other in seen):
            return False
        seen.append(item)
    return True


def compile_schema(schema: Any, *, formats_asserted: bool = False) -> Check:
    """A predicate that is True exactly when ``jsonschema`` 2020-12 accepts a JSON value.

    Raises ``Unsupported`` when the schema uses anything not implemented exactly.
    """
    compiler = _Compiler(schema, formats_asserted)
    check = compiler.compile(schema, top=True)

    def native_only(x: Any) -> bool:
        try:
            return check(x)
        except (TypeError, RecursionError):
            return False

    return native_only


@cache
def _compiled(kind: str, version: str) -> Check | None:
    reference = validator(kind, version)  # also checks the schema itself
    try:
        return compile_schema(
            load_schema(kind, version),
            formats_asserted=reference.format_checker is not None,
        )
    except Unsupported:
        return None


def fast_check(kind: str, version: str, value: Any) -> bool:
    """True only if ``value`` is valid for the kind's schema; False means "ask jsonschema"."""
    check = _compiled(kind, version)
    return check is not None and check(value)


def compiled_kinds(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], bool]:
    """Which (kind, version) schemas have a compiled fast path (for reports and tests)."""
    return {pair: _compiled(*pair) is not None for pair in pairs}
