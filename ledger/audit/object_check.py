"""The audit's per-object check: one definition, with its fast path inside.

``check_object(obj)`` returns the findings for one stored object (digest of the stored
bytes, canonical form, kind, schema, index columns) and the references its bytes imply.
The clean case is recomputed cheaply first (one SHA-256, one ``canonical_value`` pass
showing the stored bytes are their own canonical form, else one ``encode`` pass, the
schema verdict, the index columns);
anything else goes to ``_reference_check``, so every finding and message comes from
one place. tests/test_fastcanon_fastcheck.py proves both give the same result.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from ledger.audit.findings import LedgerFinding
from ledger.encoding.canonical import (
    canonical_value,
    encode,
    legacy_with_doubles,
    require_canonical,
)
from ledger.encoding.digest import legacy_digest, sha256_digest
from ledger.encoding.strict import legacy_bytes
from ledger.errors import LedgerError
from ledger.schema import validation as schema
from ledger.schema.kinds import BLOB, detect_kind, document
from ledger.store.base import StoredObject
from ledger.store.derived import HintError, apply_checked_hints, parse_hints

if TYPE_CHECKING:
    from ledger.encoding.values import FloatHint, JSONObject, JSONValue

CheckResult = tuple[list[LedgerFinding], list[tuple[str, str]]]


def check_object(obj: StoredObject) -> CheckResult:
    """Findings for one object, and the references its bytes imply."""
    return check_parsed(obj)[0]


def check_parsed(obj: StoredObject) -> tuple[CheckResult, JSONObject | None]:
    """``check_object(obj)``, and the document its bytes parse to when it found nothing
    (None for a blob, or when the reference check ran): a reader of the object's
    contents need not parse the bytes a second time."""
    try:
        clean = _clean_refs(obj)
    except Exception:  # any surprise: the reference decides (and reports)
        clean = None
    if clean is None:
        return _reference_check(obj), None
    return ([], clean[0]), clean[1]


def _clean_refs(obj: StoredObject) -> tuple[list[tuple[str, str]], JSONObject | None] | None:
    """The object's references and its parsed document if every audit check passes,
    else None."""
    return clean_columns(
        obj.digest,
        obj.kind,
        obj.data,
        obj.schema_version,
        obj.object_id,
        obj.object_version,
        obj.legacy_digest,
        obj.legacy_hints,
    )


def clean_columns(
    digest: str,
    kind: str,
    data: bytes,
    schema_version: str | None,
    object_id: str | None,
    object_version: int | None,
    legacy_digest: str | None,
    legacy_hints: str | None,
) -> tuple[list[tuple[str, str]], JSONObject | None] | None:
    """``_clean_refs`` of the object row with these columns (``check_object``'s fast
    path, taken by the audit's chunk checks straight from the columns): its references
    and parsed document if every audit check passes, else None (and then the reference
    check decides). May raise on a surprise; its callers then ask the reference."""
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if actual != digest:
        return None
    if kind == BLOB:
        side = (schema_version, object_id, object_version, legacy_digest)
        clean_blob = side == (None, None, None, None) and legacy_hints is None
        return ([], None) if clean_blob else None
    shown, value = canonical_value(data)
    if shown:
        # ``json`` writes the value back as exactly these bytes, and that is also the
        # legacy form (no integral doubles: a canonical document has none).
        legacy_form = data
    else:
        try:
            encoded = encode(data)
        except LedgerError:
            return None
        if encoded.canonical != data:
            return None
        value, legacy_form = encoded.value, encoded.legacy
    try:
        doc = document(value)
        spec = detect_kind(doc)
    except LedgerError:
        return None
    version = doc.get("schema_version")
    if spec.name != kind or not isinstance(version, str) or version not in spec.versions:
        return None
    if not schema.is_valid(spec.name, version, doc):
        return None
    refs = spec.refs(doc)
    legacy = None
    if spec.native and legacy_hints is not None:
        return None
    if not spec.native:
        if legacy_hints is not None:
            legacy = hinted_legacy_digest(data, doc, shown, legacy_hints)
        elif legacy_form is data:
            legacy = actual  # the same bytes: their digest is already known
        else:
            legacy = sha256_digest(legacy_form)
    expected = (version, spec.object_id(doc), spec.object_version(doc), legacy)
    stored = (schema_version, object_id, object_version, legacy_digest)
    return (refs, doc) if expected == stored else None


def hinted_legacy_digest(data: bytes, value: JSONObject, shown: bool, hints_text: str) -> str:
    """The legacy digest of canonical ``data`` (parsed: ``value``) with its float hints.

    Hints turn the canonical integers back into the doubles the legacy form prints;
    only checked hints (integer to equal double) count, else ``HintError``. ``shown``:
    ``data`` is known to be ``json``'s own output for ``value`` (``canonical_value``), so
    the legacy form is spliced from it instead of encoded whole.
    """
    hints = parse_hints(value, hints_text)
    applied = apply_checked_hints(value, hints)
    spliced = _spliced_legacy(data, value, applied, hints) if shown else None
    return sha256_digest(legacy_bytes(applied) if spliced is None else spliced)


def _spliced_legacy(
    data: bytes, value: JSONObject, applied: JSONValue, hints: list[FloatHint]
) -> bytes | None:
    """``legacy_bytes(applied)`` from ``data == legacy_bytes(value)``, or None (encode it
    all then): ``applied`` is ``value`` with the checked hints applied, so it differs
    only in integers turned into the doubles the hints spell (``legacy_with_doubles``:
    one C encoding pass, no Python rebuild of the document's text)."""
    return legacy_with_doubles(data, value, applied, [str(hint[-1]) for hint in hints])


def _reference_check(obj: StoredObject) -> CheckResult:
    """Findings for one object, and the references its bytes imply: the definition."""
    found: list[LedgerFinding] = []
    refs: list[tuple[str, str]] = []
    actual = "sha256:" + hashlib.sha256(obj.data).hexdigest()
    if actual != obj.digest:
        found.append(
            LedgerFinding(
                "digest-mismatch",
                f"stored bytes hash to {actual}, expected {obj.digest}",
                obj.seq,
                obj.digest,
            )
        )
    if obj.kind == BLOB:
        stored_side = (obj.schema_version, obj.object_id, obj.object_version, obj.legacy_digest)
        if stored_side != (None, None, None, None) or obj.legacy_hints is not None:
            found.append(
                LedgerFinding(
                    "index-mismatch",
                    f"blob row has index columns {stored_side} hints {obj.legacy_hints!r},"
                    " expected none",
                    obj.seq,
                    obj.digest,
                )
            )
        return found, refs
    try:
        value = document(require_canonical(obj.data))
        spec = detect_kind(value)
        version = value.get("schema_version")
        if spec.name != obj.kind:
            found.append(
                LedgerFinding(
                    "kind-mismatch",
                    f"bytes are a {spec.name}, index says {obj.kind}",
                    obj.seq,
                    obj.digest,
                )
            )
        refs = spec.refs(value)
        schema.validate(spec.name, str(version), value)
        hints_problem = _hints_problem(spec.native, value, obj.legacy_hints)
        if hints_problem is not None:
            found.append(LedgerFinding("hints-invalid", hints_problem, obj.seq, obj.digest))
            return found, refs
        expected = (
            str(version),
            spec.object_id(value),
            spec.object_version(value),
            None if spec.native else _legacy_from_stored(value, obj.legacy_hints),
        )
        stored = (obj.schema_version, obj.object_id, obj.object_version, obj.legacy_digest)
        if expected != stored:
            found.append(
                LedgerFinding(
                    "index-mismatch",
                    f"index columns {stored}, expected {expected}",
                    obj.seq,
                    obj.digest,
                )
            )
    except LedgerError as exc:
        found.append(LedgerFinding(exc.finding_code, str(exc), obj.seq, obj.digest))
    return found, refs


def _hints_problem(native: bool, value: JSONValue, hints_text: str | None) -> str | None:
    """Why the stored float hints are not allowed (see ``ledger.store.derived``), or None."""
    if hints_text is None:
        return None
    if native:
        return "float hints on a ledger-native object, expected none"
    try:
        parse_hints(value, hints_text)
    except HintError as exc:
        return str(exc)
    return None


def _legacy_from_stored(value: JSONValue, hints_text: str | None) -> str:
    """Recompute the legacy digest from canonical bytes plus the (checked) float hints."""
    return legacy_digest(apply_checked_hints(value, parse_hints(value, hints_text)))
