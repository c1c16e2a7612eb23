"""Private: schemas compiled to generated Python functions, a fast "valid" verdict only.

Only ``ledger.schema.validation`` (the public entry point) calls this module.

``jsonschema`` walks a schema generically and costs ~1 ms per WorkUnit. Here each schema
becomes the source text of ONE Python function (plus one per recursive ``$ref`` target
and per sub-schema whose verdict is negated or counted), compiled with ``compile()`` and
``exec`` into a private namespace once per process, lazily per kind and version. The
checks are inlined: ``type(x) is dict``, direct member lookups, local variables, loops
over arrays, no call per schema node. It is used only to answer "valid":

- ``fast_check(kind, version, value)`` is True only when ``jsonschema``'s
  ``Draft202012Validator`` (as configured in ``ledger.schema.loader``) accepts ``value``.
  False means "not shown valid": the caller asks ``jsonschema``, which decides and
  explains. So a gap here costs time, never correctness.
- Every supported keyword is implemented with ``jsonschema``'s own semantics (type
  checks, the same comparisons for numeric bounds, ``_json_equal`` (jsonschema's
  ``equal``: True is not 1) for ``enum``/``const``/``uniqueItems`` wherever types could
  collide, set membership only for strings, ``re.search`` for ``pattern``, 2020-12
  ``items``/``$ref``), exactly, because ``not`` and ``if`` need exact sub-verdicts. A
  schema using anything else (unknown keywords, remote or nested-``$id`` references,
  ``prefixItems``, ``patternProperties``, asserted ``format``) is not compiled at all and
  ``fast_check`` always answers False.
- Values of types JSON cannot produce are answered False.
- No schema value is ever written into the generated text: names, patterns, bounds and
  enum sets are bound as constants in the namespace under names the generator makes up
  (``_c0``, ``_c1``...), so the source depends only on the schema's shape and is the same
  in every process (tests/test_schema_codegen.py checks it).

tests/test_fastcanon_schema.py and tests/test_schema_codegen.py compare the verdicts with
``jsonschema`` on the reference corpus, generated documents of every kind, many mutations
of them and arbitrary JSON values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, TypeAlias

from ledger.schema.loader import FORMATS_ASSERTED, load_schema

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject, JSONValue

Check = Callable[[object], bool]
Schema: TypeAlias = "JSONObject"  # a schema object (a schema may also be true or false)
Lines = list[str]  # generated source lines, indented

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
_OBJECT_KEYWORDS = (
    "required",
    "properties",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "propertyNames",
)
_ARRAY_KEYWORDS = ("items", "minItems", "maxItems", "uniqueItems")
_STRING_KEYWORDS = ("minLength", "maxLength", "pattern")
# jsonschema's numeric bounds: the comparison under which the value is refused.
_BOUNDS = (
    ("minimum", "<"),
    ("maximum", ">"),
    ("exclusiveMinimum", "<="),
    ("exclusiveMaximum", ">="),
)
_SUPPORTED = frozenset(
    {
        *_ANNOTATIONS,
        *_OBJECT_KEYWORDS,
        *_ARRAY_KEYWORDS,
        *_STRING_KEYWORDS,
        *(name for name, _ in _BOUNDS),
        "$id",
        "type",
        "format",
        "const",
        "enum",
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)

# The test for each JSON type, on a variable name the generator made up.
_TYPE_TESTS = {
    "object": "type({v}) is dict",
    "array": "type({v}) is list",
    "string": "type({v}) is str",
    "boolean": "type({v}) is bool",
    "null": "{v} is None",
    "number": "(type({v}) is int or type({v}) is float)",
    "integer": "(type({v}) is int or (type({v}) is float and {v}.is_integer()))",
}
_NOT_TYPE = {
    "object": "type({v}) is not dict",
    "array": "type({v}) is not list",
    "string": "type({v}) is not str",
    "boolean": "type({v}) is not bool",
    "null": "{v} is not None",
}
_FAIL = "return False"
_GENERATED_NAME = re.compile(r"\b_[crs][0-9]+\b")  # constants, reference and sub-schema functions
# A non-recursive ``$ref`` target is inlined where it is used when its code is at most
# this many lines; larger ones (and recursive ones) are called as their own function.
_INLINE_LINES = 80


class Unsupported(Exception):
    """The schema uses something this compiler does not implement exactly."""


def _object_of(value: JSONValue, what: str) -> JSONObject:
    """A keyword's value that must be an object (else the schema is not compiled)."""
    if not isinstance(value, dict):
        raise Unsupported(f"{what} {value!r}")
    return value


def _list_of(value: JSONValue, what: str) -> list[JSONValue]:
    """A keyword's value that must be an array (else the schema is not compiled)."""
    if not isinstance(value, list):
        raise Unsupported(f"{what} {value!r}")
    return value


def _strings_of(value: JSONValue, what: str) -> list[str]:
    """A keyword's value that must be an array of strings (else not compiled)."""
    items = _list_of(value, what)
    if not all(isinstance(item, str) for item in items):
        raise Unsupported(f"{what} {value!r}")
    return [item for item in items if isinstance(item, str)]


@dataclass(frozen=True)
class Generated:
    """The generated module: its source text and the constants it refers to by name."""

    source: str
    constants: Mapping[str, object]


class _Function:
    """One generated function being written: its lines and local variable counter."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self.subscripts = False  # uses x[name] for a required member: catch KeyError


class _Generator:
    """Writes the source of one schema document's check.

    Each ``_block`` call appends statements that ``return False`` when the value in a
    variable is not valid under a (sub-)schema, and fall through when it is. Everything
    inside one generated function is a conjunction, so an early ``return False`` (or a
    ``KeyError`` from a required member, caught per function) is always the verdict.
    """

    def __init__(self, root: JSONValue, formats_asserted: bool) -> None:
        self.root = root
        self.formats_asserted = formats_asserted
        self.constants: dict[str, object] = {}
        self.string_names: dict[str, str] = {}  # member-name constants, shared
        self.functions: list[_Function] = []
        self.ref_functions: dict[str, str] = {}  # pointer -> function name
        self.oversized: set[str] = set()
        self.inlining: list[str] = []
        self.counter = 0

    # -- names ---------------------------------------------------------------------------
    def _fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _const(self, value: object) -> str:
        if type(value) is str:
            name = self.string_names.get(value)
            if name is None:
                name = self.string_names[value] = self._fresh("_c")
                self.constants[name] = value
            return name
        name = self._fresh("_c")
        self.constants[name] = value
        return name

    # -- functions -------------------------------------------------------------------------
    def _function(
        self, name: str, schema: JSONValue, inlining: list[str], known: str | None
    ) -> None:
        """Generate ``def name(x)`` for ``schema`` (appended once, in generation order)."""
        function = _Function(name)
        self.functions.append(function)
        saved, self.inlining = self.inlining, inlining
        body: list[str] = []
        self._block(schema, "x", known, "        ", body, function)
        self.inlining = saved
        head = [f"def {name}(x):"]
        if function.subscripts:
            body = [
                "    try:",
                *(body or ["        pass"]),
                "    except KeyError:",
                "        return False",
            ]
            head += body
        else:
            head += [line[4:] for line in body]
        function.lines = [*head, "    return True"]

    def _sub_function(self, schema: JSONValue, known: str | None) -> str | bool:
        """A function for a sub-schema whose verdict is used as a value; or a constant.

        It is called only on values of JSON type ``known`` (None: any value).
        """
        if schema is True or schema is False:
            # Still a schema: nothing else to check for support.
            return bool(schema)
        name = self._fresh("_s")
        self._function(name, schema, list(self.inlining), known)
        return name

    def _ref_function(self, pointer: str, target: JSONValue) -> str:
        name = self.ref_functions.get(pointer)
        if name is None:
            name = self.ref_functions[pointer] = self._fresh("_r")
            self._function(name, target, [pointer], None)
        return name

    # -- schemas ---------------------------------------------------------------------------
    def _require_progress(
        self, schema: JSONValue, path: tuple[str, ...], seen: set[tuple[str, tuple[str, ...]]]
    ) -> None:
        """Refuse a ``$ref`` cycle along which the value checked never changes.

        ``path``: the references followed since the value last changed. Around such a
        cycle (``{"$defs": {"d": {"not": {"$ref": "#/$defs/d"}}}}``) the verdict is
        whatever is found before the recursion runs out: ``jsonschema`` stops at its
        first failing keyword, in its own order, and the generated code would run out
        of stack in another. A cycle through ``items``, ``properties`` and the like
        checks ever smaller parts of the value and ends.
        """
        if not isinstance(schema, dict):
            return
        pointer = schema.get("$ref")
        if isinstance(pointer, str):
            if pointer in path:
                raise Unsupported(f"$ref cycle without progress through {pointer!r}")
            if (pointer, path) not in seen:
                seen.add((pointer, path))
                try:
                    target = self._resolve(pointer)
                except Unsupported:
                    target = None  # refused where it is generated
                self._require_progress(target, (*path, pointer), seen)
        for name in _IN_PLACE:
            for sub in _subschemas(schema.get(name)):
                self._require_progress(sub, path, seen)
        for name in _INTO_PARTS:
            for sub in _subschemas(schema.get(name), name == "properties"):
                self._require_progress(sub, (), seen)

    def _resolve(self, pointer: str) -> JSONValue:
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
        return target

    def _known_type(self, schema: JSONValue, depth: int = 0) -> str | None:
        """The one JSON type every value valid under ``schema`` has, if the schema says."""
        if not isinstance(schema, dict) or depth > 8:
            return None
        names = schema.get("type")
        if isinstance(names, list) and len(names) == 1:
            names = names[0]
        if isinstance(names, str):
            return names
        pointer = schema.get("$ref")
        if isinstance(pointer, str):
            try:
                return self._known_type(self._resolve(pointer), depth + 1)
            except Unsupported:
                return None
        return None

    def _block(
        self,
        schema: JSONValue,
        v: str,
        known: str | None,
        ind: str,
        out: list[str],
        fn: _Function,
    ) -> None:
        """Append statements refusing the value in variable ``v`` unless ``schema`` holds.

        ``known`` is the JSON type ``v`` is already known to have (None: any value).
        """
        if schema is True:
            return
        if schema is False:
            out.append(ind + _FAIL)
            return
        if not isinstance(schema, dict):
            raise Unsupported(f"schema of type {type(schema).__name__}")
        if "$id" in schema and schema is not self.root:
            raise Unsupported("nested $id")
        if "format" in schema and self.formats_asserted:
            raise Unsupported("asserted format")
        if "patternProperties" in schema:
            raise Unsupported("patternProperties")
        if "prefixItems" in schema or "contains" in schema:
            raise Unsupported("prefixItems/contains")
        extra = set(schema) - _SUPPORTED
        if extra:
            raise Unsupported(f"keywords {sorted(extra)}")
        for name, _ in _BOUNDS:
            bound = schema.get(name, 0)
            if not (type(bound) is int or type(bound) is float):
                raise Unsupported(f"{name} {bound!r}")

        if "type" in schema:
            given = schema["type"]
            names: list[str] = []
            for listed in given if isinstance(given, list) else [given]:
                if not isinstance(listed, str) or listed not in _TYPE_TESTS:
                    raise Unsupported(f"type {listed!r}")
                names.append(listed)
            if len(names) == 1 and known is not None and _implies(known, names[0]):
                pass  # already established by the caller
            elif len(names) == 1 and names[0] in _NOT_TYPE:
                out.append(f"{ind}if {_NOT_TYPE[names[0]].format(v=v)}: {_FAIL}")
            elif names:
                tests = " or ".join(_TYPE_TESTS[name].format(v=v) for name in names)
                out.append(f"{ind}if not ({tests}): {_FAIL}")
            else:
                out.append(ind + _FAIL)  # no type admits the value
            if len(names) == 1:
                known = _narrow(known, names[0])

        groups = (
            ("object", "type({v}) is dict", _OBJECT_KEYWORDS, self._object),
            ("array", "type({v}) is list", _ARRAY_KEYWORDS, self._array),
            ("string", "type({v}) is str", _STRING_KEYWORDS, self._string),
            ("number", "(type({v}) is int or type({v}) is float)", (), self._number),
        )
        native_checked = known is not None
        for group, test, keywords, emit in groups:
            if group == "number":
                present = any(name in schema for name, _ in _BOUNDS)
            else:
                present = any(name in schema for name in keywords)
            if not present:
                continue
            applies = _applies(known, group)
            if applies is False:
                # The keywords never apply to this type; still check what they hold.
                emit(schema, v, ind, [], fn)
                continue
            if applies:
                emit(schema, v, ind, out, fn)
                continue
            lines: list[str] = []
            emit(schema, v, ind + "    ", lines, fn)
            if not native_checked:
                # jsonschema would skip these keywords for a value of another type; a
                # value JSON cannot produce is not vouched for.
                out.append(f"{ind}if type({v}) not in _NATIVE: {_FAIL}")
                native_checked = True
            if lines:
                out.append(f"{ind}if {test.format(v=v)}:")
                out.extend(lines)

        if "const" in schema:
            out.append(f"{ind}if {self._equal_test(v, schema['const'])}: {_FAIL}")
        if "enum" in schema:
            self._enum(_list_of(schema["enum"], "enum"), v, known, ind, out)
        self._applicators(schema, v, known, ind, out, fn)

    def _equal_test(self, v: str, const: JSONValue) -> str:
        """A test that is True when ``v`` is NOT jsonschema-equal to ``const``."""
        if type(const) is str:
            # A string equals only an equal string under ``equal``, and under ``==``.
            return f"{v} != {self._const(const)}"
        if const is None:
            return f"{v} is not None"
        if const is True or const is False:
            # ``equal`` never takes a boolean for a number, nor a number for a boolean.
            return f"{v} is not {'True' if const else 'False'}"
        return f"not _json_equal({v}, {self._const(const)})"

    def _enum(
        self, options: list[JSONValue], v: str, known: str | None, ind: str, out: Lines
    ) -> None:
        strings = frozenset(o for o in options if type(o) is str)
        others = [o for o in options if type(o) is not str]
        if known == "string":
            out.append(f"{ind}if {v} not in {self._const(strings)}: {_FAIL}")
        elif not others:
            test = f"type({v}) is not str or {v} not in {self._const(strings)}"
            out.append(f"{ind}if {test}: {_FAIL}")
        else:
            out.append(f"{ind}if type({v}) is str:")
            out.append(f"{ind}    if {v} not in {self._const(strings)}: {_FAIL}")
            out.append(f"{ind}elif not _any_equal({self._const(tuple(others))}, {v}): {_FAIL}")

    # -- type-specific keywords (``v`` is known to hold that type) --------------------------
    def _object(self, schema: Schema, v: str, ind: str, out: Lines, fn: _Function) -> None:
        props = _object_of(schema.get("properties", {}), "properties")
        required = list(dict.fromkeys(_strings_of(schema.get("required", []), "required")))
        additional = schema.get("additionalProperties", True)
        closed = additional is False and bool(props)
        count = self._fresh("n") if closed else ""
        if closed:
            # No member outside "properties": count the members found among them.
            present = sum(1 for name in props if name in required)
            out.append(f"{ind}{count} = {present}")
        for name in required:
            if name not in props:
                out.append(f"{ind}if {self._const(name)} not in {v}: {_FAIL}")
        for name, sub in props.items():
            key = self._const(name)
            member = self._fresh("v")
            if name in required:
                lines: list[str] = []
                self._block(sub, member, None, ind, lines, fn)
                if lines:
                    fn.subscripts = True  # a missing member raises KeyError: refused
                    out.extend(_bind(member, f"{v}[{key}]", lines, ind))
                else:
                    out.append(f"{ind}if {key} not in {v}: {_FAIL}")
            else:
                lines = []
                self._block(sub, member, None, ind + "    ", lines, fn)
                if lines or closed:
                    out.append(f"{ind}if {key} in {v}:")
                    if closed:
                        out.append(f"{ind}    {count} += 1")
                    if lines:
                        out.extend(_bind(member, f"{v}[{key}]", lines, ind + "    "))
        if additional is False:
            if closed:
                out.append(f"{ind}if len({v}) != {count}: {_FAIL}")
            else:
                out.append(f"{ind}if {v}: {_FAIL}")
        elif additional is not True:
            key, member = self._fresh("k"), self._fresh("v")
            inner = ind + ("        " if props else "    ")
            lines = []
            self._block(additional, member, None, inner, lines, fn)
            if lines:
                out.append(f"{ind}for {key}, {member} in {v}.items():")
                if props:
                    out.append(f"{ind}    if {key} not in {self._const(frozenset(props))}:")
                out.extend(lines)
        if "propertyNames" in schema:
            key = self._fresh("k")
            lines = []
            self._block(schema["propertyNames"], key, None, ind + "    ", lines, fn)
            if lines:
                out.append(f"{ind}for {key} in {v}:")
                out.extend(lines)
        if "minProperties" in schema:
            out.append(f"{ind}if len({v}) < {self._const(schema['minProperties'])}: {_FAIL}")
        if "maxProperties" in schema:
            out.append(f"{ind}if len({v}) > {self._const(schema['maxProperties'])}: {_FAIL}")
        dependent = _object_of(schema.get("dependentRequired", {}), "dependentRequired")
        for name, needs in dependent.items():
            if needs:
                listed = _strings_of(needs, "dependentRequired")
                missing = " or ".join(f"{self._const(n)} not in {v}" for n in listed)
                out.append(f"{ind}if {self._const(name)} in {v} and ({missing}): {_FAIL}")

    def _array(self, schema: Schema, v: str, ind: str, out: Lines, fn: _Function) -> None:
        if "minItems" in schema:
            out.append(f"{ind}if len({v}) < {self._const(schema['minItems'])}: {_FAIL}")
        if "maxItems" in schema:
            out.append(f"{ind}if len({v}) > {self._const(schema['maxItems'])}: {_FAIL}")
        item_type = None
        if "items" in schema:
            element = self._fresh("e")
            lines: list[str] = []
            self._block(schema["items"], element, None, ind + "    ", lines, fn)
            if lines:
                out.append(f"{ind}for {element} in {v}:")
                out.extend(lines)
            item_type = self._known_type(schema["items"])
        if schema.get("uniqueItems", False):
            if item_type == "string":
                # Every element is a str here (checked above): for strings, ``equal`` is
                # ``==``, so distinct under hash/== is exactly distinct under ``equal``.
                out.append(f"{ind}if len({v}) > 1 and len(set({v})) != len({v}): {_FAIL}")
            else:
                out.append(f"{ind}if not _unique({v}): {_FAIL}")

    def _string(self, schema: Schema, v: str, ind: str, out: Lines, fn: _Function) -> None:
        if "minLength" in schema:
            out.append(f"{ind}if len({v}) < {self._const(schema['minLength'])}: {_FAIL}")
        if "maxLength" in schema:
            out.append(f"{ind}if len({v}) > {self._const(schema['maxLength'])}: {_FAIL}")
        if "pattern" in schema:
            pattern = schema["pattern"]
            if not isinstance(pattern, str):
                raise Unsupported(f"pattern {pattern!r}")
            search = self._const(re.compile(pattern).search)
            out.append(f"{ind}if {search}({v}) is None: {_FAIL}")

    def _number(self, schema: Schema, v: str, ind: str, out: Lines, fn: _Function) -> None:
        for name, refused in _BOUNDS:
            if name in schema:
                out.append(f"{ind}if {v} {refused} {self._const(schema[name])}: {_FAIL}")

    # -- applicators ------------------------------------------------------------------------
    def _applicators(
        self, schema: Schema, v: str, known: str | None, ind: str, out: Lines, fn: _Function
    ) -> None:
        if "$ref" in schema:
            pointer = schema["$ref"]
            if not isinstance(pointer, str):
                raise Unsupported("$ref")
            target = self._resolve(pointer)
            lines: list[str] = []
            if pointer not in self.inlining and pointer not in self.oversized:
                self.inlining.append(pointer)
                self._block(target, v, known, ind, lines, fn)
                self.inlining.pop()
                if len(lines) > _INLINE_LINES:
                    self.oversized.add(pointer)
            if pointer in self.inlining or pointer in self.oversized:
                out.append(f"{ind}if not {self._ref_function(pointer, target)}({v}): {_FAIL}")
            else:
                out.extend(lines)
        for sub in _list_of(schema.get("allOf", []), "allOf"):
            self._block(sub, v, known, ind, out, fn)
        if "anyOf" in schema:
            options = [self._sub_function(s, known) for s in _list_of(schema["anyOf"], "anyOf")]
            if True not in options:
                calls = " or ".join(f"{name}({v})" for name in options if name is not False)
                out.append(f"{ind}if not ({calls or 'False'}): {_FAIL}")
        if "oneOf" in schema:
            options = [self._sub_function(s, known) for s in _list_of(schema["oneOf"], "oneOf")]
            terms = [f"{o}({v})" if isinstance(o, str) else "1" if o else "0" for o in options]
            out.append(f"{ind}if {' + '.join(terms) or '0'} != 1: {_FAIL}")
        if "not" in schema:
            negated = self._sub_function(schema["not"], known)
            if negated is True:
                out.append(ind + _FAIL)
            elif negated is not False:
                out.append(f"{ind}if {negated}({v}): {_FAIL}")
        if "if" in schema:
            # Without "if", jsonschema ignores "then"/"else".
            cond = self._sub_function(schema["if"], known)
            then: list[str] = []
            other: list[str] = []
            self._block(schema.get("then", True), v, known, ind + "    ", then, fn)
            self._block(schema.get("else", True), v, known, ind + "    ", other, fn)
            if cond is True:
                out.extend(line[4:] for line in then)
            elif cond is False:
                out.extend(line[4:] for line in other)
            elif then and other:
                out.extend([f"{ind}if {cond}({v}):", *then, f"{ind}else:", *other])
            elif then:
                out.extend([f"{ind}if {cond}({v}):", *then])
            elif other:
                out.extend([f"{ind}if not {cond}({v}):", *other])

    # -- the module ------------------------------------------------------------------------
    def generate(self, guard: bool) -> Generated:
        self._require_progress(self.root, (), set())
        entry: list[str] = []
        entry_fn = _Function("check")
        self._block(self.root, "x", None, "        ", entry, entry_fn)
        caught = "KeyError, TypeError, RecursionError" if guard else "KeyError"
        lines = [
            "def check(x):",
            "    try:",
            *(entry or ["        pass"]),
            f"    except ({caught}):",
            "        return False",
            "    return True",
        ]
        # Keep only the functions and constants the entry point reaches: code generated
        # for a reference target that turned out too large to inline is not used.
        functions = {f.name: f.lines for f in self.functions}
        used: dict[str, None] = {}
        pending = [lines]
        while pending:
            for name in _GENERATED_NAME.findall("\n".join(pending.pop())):
                if name not in used:
                    used[name] = None
                    if name in functions:
                        pending.append(functions[name])
        kept = [f.lines for f in self.functions if f.name in used]
        source = "\n\n".join("\n".join(f) for f in [*kept, lines]) + "\n"
        constants = {name: value for name, value in self.constants.items() if name in used}
        return Generated(source, constants)


def _bind(name: str, value: str, lines: Lines, ind: str) -> Lines:
    """``lines`` reading variable ``name``, preceded by ``name = value``.

    When the first line is the only one using the variable, and uses it before any
    ``and``/``or`` (so it is evaluated exactly once, first), ``value`` is written there
    instead: one store and load fewer. All names here are the generator's own.
    """
    token = re.compile(rf"\b{name}\b")
    first = lines[0]
    found = token.search(first)
    if (
        found is not None
        and len(token.findall(first)) == 1
        and not any(token.search(line) for line in lines[1:])
        and " and " not in first[: found.start()]
        and " or " not in first[: found.start()]
    ):
        return [first[: found.start()] + value + first[found.end() :], *lines[1:]]
    return [f"{ind}{name} = {value}", *lines]


def _implies(known: str, name: str) -> bool:
    """Every value of JSON type ``known`` is of type ``name``."""
    return known == name or (known == "integer" and name == "number")


def _narrow(known: str | None, name: str) -> str:
    if known == "integer" and name == "number":
        return known
    return name


def _applies(known: str | None, group: str) -> bool | None:
    """Whether a keyword group applies to a value of JSON type ``known`` (None: maybe)."""
    if known is None:
        return None
    if group == "number":
        return known in ("number", "integer")
    return known == group


# Applicators that check the value itself, and those that check its members, items or
# member names (``_Generator._require_progress``).
_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else")
_INTO_PARTS = ("properties", "additionalProperties", "propertyNames", "items")


def _subschemas(value: JSONValue, members: bool = False) -> list[JSONValue]:
    """The sub-schemas a keyword's value holds: a schema, a list of them, or (for
    ``properties``) an object of them."""
    if members:
        return list(value.values()) if isinstance(value, dict) else []
    if isinstance(value, list):
        return value
    return [value] if value is not None else []


def generate(schema: JSONValue, *, formats_asserted: bool = False, guard: bool = True) -> Generated:
    """The source of ``check(x)`` for ``schema`` and the constants it names.

    Raises ``Unsupported`` when the schema uses anything not implemented exactly.
    ``guard`` answers False instead of raising for values JSON cannot produce (and for
    nesting deeper than the interpreter's recursion limit); tests turn it off to show
    the code never raises on JSON values.
    """
    return _Generator(schema, formats_asserted).generate(guard)


def _load(generated: Generated, label: str) -> Check:
    namespace: dict[str, object] = {
        # Only what the generated code uses.
        "__builtins__": {
            "type": type,
            "len": len,
            "set": set,
            "dict": dict,
            "list": list,
            "str": str,
            "int": int,
            "float": float,
            "bool": bool,
            "KeyError": KeyError,
            "TypeError": TypeError,
            "RecursionError": RecursionError,
        },
        "_NATIVE": _NATIVE,
        "_json_equal": _json_equal,
        "_any_equal": _any_equal,
        "_unique": _unique,
        **generated.constants,
    }
    exec(compile(generated.source, f"<schema check {label}>", "exec"), namespace)
    check = namespace["check"]
    if not callable(check):
        raise Unsupported("generated module defines no check")
    return check


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


def _any_equal(options: tuple[object, ...], value: object) -> bool:
    return any(_json_equal(option, value) for option in options)


def _unique(x: list[object]) -> bool:
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


def compile_schema(schema: JSONValue, *, formats_asserted: bool = False) -> Check:
    """A predicate that is True exactly when ``jsonschema`` 2020-12 accepts a JSON value.

    Raises ``Unsupported`` when the schema uses anything not implemented exactly.
    """
    return _load(generate(schema, formats_asserted=formats_asserted), "")


@cache
def _compiled(kind: str, version: str) -> Check | None:
    # Built from the schema alone: the reference validator (and jsonschema) is loaded
    # only when a document needs its verdict.
    try:
        generated = generate(load_schema(kind, version), formats_asserted=FORMATS_ASSERTED)
    except Unsupported:
        return None
    return _load(generated, f"{kind} {version}")


def fast_check(kind: str, version: str, value: object) -> bool:
    """True only if ``value`` is valid for the kind's schema; False means "ask jsonschema"."""
    check = _compiled(kind, version)
    return check is not None and check(value)


def compiled_kinds(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], bool]:
    """Which (kind, version) schemas have a compiled fast path (for reports and tests)."""
    return {pair: _compiled(*pair) is not None for pair in pairs}
