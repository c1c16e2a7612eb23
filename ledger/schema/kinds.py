"""The kind registry: what object kinds the ledger stores and how to recognise them.

The registry is data, ``schemas/kinds.json`` (shipped beside the schemas it names), read
once by ``load_registry``; this module names no kind but ``blob``. Adding a kind = one
schema file ``schemas/<kind>-v<version>.schema.json`` plus one entry in ``kinds.json``.

Detection rule (when ``--kind`` is not given), applied to a JSON object:
1. ``provledger_kind`` present: that ledger-native kind (must be registered).
2. Otherwise exactly one non-native kind's ``detect_keys`` must all be members. No match
   is "unknown", two or more is "ambiguous".
The schema version is the document's ``schema_version`` and must be registered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from ledger.errors import KindError

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject

BLOB = "blob"
REGISTRY_FORMAT = "provledger-kinds/v1"


@dataclass(frozen=True)
class RefPath:
    """A reference the ledger indexes: relation name, and the member path of the digest."""

    rel: str
    path: tuple[str, ...]


@dataclass(frozen=True)
class KindSpec:
    """One registered kind. ``native`` kinds carry ``provledger_kind``."""

    name: str
    versions: tuple[str, ...]
    native: bool = False
    detect_keys: tuple[str, ...] = ()
    id_field: str | None = "id"
    version_field: str | None = "version"
    ref_paths: tuple[RefPath, ...] = ()

    def object_id(self, obj: Mapping[str, object]) -> str | None:
        value = obj.get(self.id_field) if self.id_field else None
        return value if isinstance(value, str) else None

    def object_version(self, obj: Mapping[str, object]) -> int | None:
        value = obj.get(self.version_field) if self.version_field else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def refs(self, obj: Mapping[str, object]) -> list[tuple[str, str]]:
        """(relation, digest) for each ref path that holds a ``sha256:`` string."""
        out: list[tuple[str, str]] = []
        for ref in self.ref_paths:
            value: object = obj
            for part in ref.path:
                # (a dict, the usual document, without the slower abstract-class test)
                if not (type(value) is dict or isinstance(value, Mapping)) or part not in value:
                    value = None
                    break
                value = value[part]
            if isinstance(value, str) and value.startswith("sha256:"):
                out.append((ref.rel, value))
        return out


_SPEC_MEMBERS = {"name", "versions", "native", "detect_keys", "id_field", "version_field", "refs"}


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what}, got {value!r}, expected a list of strings")
    return tuple(value)


def _optional_name(value: object, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{what}, got {value!r}, expected a member name or null")
    return value


def _spec(entry: object) -> KindSpec:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise ValueError(f"kind entry, got {entry!r}, expected an object with a name")
    name = entry["name"]
    unknown = sorted(set(entry) - _SPEC_MEMBERS)
    if unknown:
        raise ValueError(
            f"kind {name}: unknown members {unknown}, expected {sorted(_SPEC_MEMBERS)}"
        )
    native = entry.get("native", False)
    if not isinstance(native, bool):
        raise ValueError(f"kind {name}: native, got {native!r}, expected a boolean")
    refs = entry.get("refs", [])
    if not isinstance(refs, list):
        raise ValueError(f"kind {name}: refs, got {refs!r}, expected a list")
    ref_paths = []
    for ref in refs:
        if not isinstance(ref, dict) or set(ref) != {"rel", "path"}:
            raise ValueError(f"kind {name}: ref, got {ref!r}, expected {{rel, path}}")
        if not isinstance(ref["rel"], str):
            raise ValueError(f"kind {name}: ref rel, got {ref['rel']!r}, expected a string")
        ref_paths.append(RefPath(ref["rel"], _strings(ref["path"], f"kind {name}: ref path")))
    return KindSpec(
        name=name,
        versions=_strings(entry.get("versions"), f"kind {name}: versions"),
        native=native,
        detect_keys=_strings(entry.get("detect_keys", []), f"kind {name}: detect_keys"),
        id_field=_optional_name(entry.get("id_field", "id"), f"kind {name}: id_field"),
        version_field=_optional_name(
            entry.get("version_field", "version"), f"kind {name}: version_field"
        ),
        ref_paths=tuple(ref_paths),
    )


def parse_registry(text: str) -> dict[str, KindSpec]:
    """Parse a kinds registry document; anything not understood raises ``ValueError``."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("format") != REGISTRY_FORMAT:
        raise ValueError(f"kinds registry, got no format {REGISTRY_FORMAT!r}, expected it")
    if set(doc) - {"format", "description", "kinds"} or not isinstance(doc.get("kinds"), list):
        raise ValueError("kinds registry, expected exactly format, description and kinds")
    specs: dict[str, KindSpec] = {}
    for entry in doc["kinds"]:
        spec = _spec(entry)
        if spec.name in specs or spec.name == BLOB:
            raise ValueError(f"kinds registry: kind {spec.name!r} defined twice or reserved")
        if not spec.native and not spec.detect_keys:
            raise ValueError(f"kind {spec.name}: a non-native kind needs detect_keys")
        specs[spec.name] = spec
    return specs


def load_registry() -> dict[str, KindSpec]:
    """The registry shipped in the ``schemas`` package (``schemas/kinds.json``)."""
    return parse_registry(resources.files("schemas").joinpath("kinds.json").read_text("utf-8"))


KINDS: Mapping[str, KindSpec] = load_registry()

# (detect_keys as a set, spec) of each non-native kind, in registry order: a subset test
# against the document's keys view costs ~0.9 us per document against ~3 us for
# ``all(key in obj ...)`` over every kind (detection runs once per imported or audited
# document).
_DETECT = tuple((frozenset(spec.detect_keys), spec) for spec in KINDS.values() if not spec.native)


def get_kind(name: str) -> KindSpec:
    """The registered spec for ``name``; unknown names raise ``KindError``."""
    try:
        return KINDS[name]
    except KeyError:
        known = ", ".join(sorted([*KINDS, BLOB]))
        raise KindError(f"unknown kind, got {name!r}, expected one of: {known}") from None


def document(value: object) -> JSONObject:
    """``value`` when it is a JSON object (every stored document is one), else ``KindError``."""
    if not isinstance(value, dict):
        raise KindError(
            f"document is not a JSON object, got {type(value).__name__}, expected an object"
        )
    return value


def detect_kind(value: object) -> KindSpec:
    """Apply the detection rule in the module docstring."""
    obj = document(value)
    native = obj.get("provledger_kind")
    if native is not None:
        if not isinstance(native, str) or native not in KINDS or not KINDS[native].native:
            raise KindError(
                f"unknown ledger-native kind at $.provledger_kind, got {native!r},"
                f" expected one of: {', '.join(n for n, s in KINDS.items() if s.native)}"
            )
        return KINDS[native]
    keys = obj.keys()
    matches = [spec for detect, spec in _DETECT if detect <= keys]
    if not matches:
        raise KindError(
            "cannot tell the document's kind, got no matching structure,"
            " expected one of the documented shapes (or pass --kind)"
        )
    if len(matches) > 1:
        names = ", ".join(spec.name for spec in matches)
        raise KindError(f"ambiguous document, got structure of {names}, expected exactly one kind")
    return matches[0]


def schema_version_of(spec: KindSpec, obj: Mapping[str, object]) -> str:
    """The document's registered schema version, else ``KindError``."""
    version = obj.get("schema_version")
    if not isinstance(version, str) or version not in spec.versions:
        raise KindError(
            f"unsupported {spec.name} schema version at $.schema_version, got {version!r},"
            f" expected one of {', '.join(spec.versions)}"
        )
    return version
