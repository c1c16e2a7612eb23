"""provledger's own IDKMesh schemas must give the same verdict as upstream's.

Upstream's schemas (no licence) are only *read* here, as an oracle: every JSON
document of the reference corpus, and a few thousand mutations derived from
those documents, must be accepted by our schema exactly when upstream's schema
of the same kind and version accepts it. Both sides use the same validator
class (jsonschema Draft 2020-12, `pattern` via Python `re.search`), so any
difference in verdict is a difference in the schemas. A structural comparison
(refs inlined, annotations dropped) covers what no mutation happens to probe,
such as an extra enum value.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from functools import cache, partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

HERE = Path(__file__).resolve()
OURS = HERE.parents[1] / "schemas"
CORPUS = HERE.parents[2] / "shared" / "reference" / "idkmesh"
UPSTREAM = CORPUS / "schemas"
CORPUS_MISSING = f"IDKMesh reference corpus not found at {CORPUS} (upstream schemas are the oracle)"

KIND_VERSIONS: dict[str, tuple[str, ...]] = {
    "work-unit": ("0.1", "0.2"),
    "result-manifest": ("0.1",),
    "evaluator-plan": ("0.1", "0.2", "0.3", "0.4"),
    "verification-result": ("0.1",),
    "benchmark-cohort": ("0.1",),
}
ALL_VERSIONS = sorted({v for vs in KIND_VERSIONS.values() for v in vs})

# Facts about the corpus as checked in (see MANIFEST.tsv there): the only
# document upstream's schemas refuse is a WorkUnit whose "kind" is "code", not
# one of the enum values. The "invalid-mismatched-provenance" example is
# schema-valid; its defect (a digest that does not chain) is semantic.
UPSTREAM_REJECTS = frozenset(
    {
        "benchmarks/phase-b2-first-five-v3/work-units/task-101-negative-evidence-type-boundary.work-unit.json"
    }
)

Json = Any
Side = str  # "ours" | "upstream"


# --------------------------------------------------------------------------- loading


def kind_of(doc: Json) -> str | None:
    """Protocol kind by structure; None for JSON that is no protocol object."""
    if not isinstance(doc, dict):
        return None
    if "binding" in doc and "required_validator_ids" in doc:
        return "evaluator-plan"
    if "objective" in doc and "validators" in doc:
        return "work-unit"
    if "result_manifest_id" in doc:
        return "verification-result"
    if "produced_artifacts" in doc:
        return "result-manifest"
    if "tasks" in doc and "minimum_final_tasks" in doc:
        return "benchmark-cohort"
    return None


def _schema_file(side: Side, kind: str, version: str) -> Path:
    return (OURS if side == "ours" else UPSTREAM) / f"{kind}-v{version}.schema.json"


@cache
def _schema(side: Side, kind: str, version: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(_schema_file(side, kind, version).read_text("utf-8"))
    return loaded


@cache
def validator(side: Side, kind: str, version: str, formats: bool = False) -> Draft202012Validator:
    checker = FormatChecker() if formats else None
    return Draft202012Validator(_schema(side, kind, version), format_checker=checker)


def accepts(side: Side, kind: str, version: str, doc: Json, formats: bool = False) -> bool:
    return bool(validator(side, kind, version, formats).is_valid(doc))


@cache
def _corpus_file(rel: str) -> Json:
    """One parsed corpus file; callers must not mutate it (edits copy along their path)."""
    return json.loads((CORPUS / rel).read_text("utf-8"))


def _corpus_docs() -> list[tuple[str, str, Json]]:
    """(relative path, kind, document) for every protocol object in the corpus."""
    out = []
    for path in sorted(CORPUS.rglob("*.json")):
        rel = path.relative_to(CORPUS).as_posix()
        if rel.startswith("schemas/"):
            continue
        doc = _corpus_file(rel)
        kind = kind_of(doc)
        if kind is not None:
            out.append((rel, kind, doc))
    return out


def _corpus_params() -> list[Any]:
    if not UPSTREAM.is_dir():
        return [pytest.param(None, None, None, marks=pytest.mark.skip(reason=CORPUS_MISSING))]
    return [pytest.param(rel, kind, doc, id=rel) for rel, kind, doc in _corpus_docs()]


@pytest.fixture
def corpus() -> list[tuple[str, str, Json]]:
    if not UPSTREAM.is_dir():
        pytest.skip(CORPUS_MISSING)
    return _corpus_docs()


def _version(kind: str, doc: Json) -> str:
    version = doc.get("schema_version")
    assert version in KIND_VERSIONS[kind], f"{kind} schema_version, got {version!r}"
    return str(version)


# --------------------------------------------------------------------------- our schemas alone


@pytest.mark.parametrize(
    ("kind", "version"), [(k, v) for k, vs in KIND_VERSIONS.items() for v in vs]
)
def test_own_schema_is_valid_draft_2020_12_with_own_id(kind: str, version: str) -> None:
    path = _schema_file("ours", kind, version)
    schema = _schema("ours", kind, version)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://provledger.dev/schemas/{path.name}"
    assert schema["properties"]["schema_version"] == {"const": version}
    assert schema["additionalProperties"] is False


def test_schema_directory_holds_every_upstream_kind() -> None:
    expected = {f"{k}-v{v}.schema.json" for k, vs in KIND_VERSIONS.items() for v in vs}
    found = {p.name for p in OURS.glob("*.schema.json")}
    # Ledger-native kinds may add files; every upstream kind must be present.
    assert expected <= found, f"missing schema files, got {sorted(found)}"


# --------------------------------------------------------------------------- corpus agreement


@pytest.mark.parametrize(("rel", "kind", "doc"), _corpus_params())
def test_corpus_document_same_verdict(rel: str, kind: str, doc: Json) -> None:
    version = _version(kind, doc)
    # Format checking is off by default in jsonschema; compare with it on too.
    for formats in (False, True):
        theirs = accepts("upstream", kind, version, doc, formats)
        ours = accepts("ours", kind, version, doc, formats)
        assert ours == theirs, f"{rel}: ours={ours} upstream={theirs} (formats={formats})"
    expected = rel not in UPSTREAM_REJECTS
    assert accepts("upstream", kind, version, doc) == expected, f"{rel}: upstream verdict changed"


def test_corpus_covers_every_kind_and_has_a_rejected_document(
    corpus: list[tuple[str, str, Json]],
) -> None:
    kinds = {kind for _, kind, _ in corpus}
    assert kinds == set(KIND_VERSIONS)
    rejected = {
        rel for rel, kind, doc in corpus if not accepts("upstream", kind, _version(kind, doc), doc)
    }
    assert rejected == UPSTREAM_REJECTS
    skipped = {
        p.relative_to(CORPUS).as_posix()
        for p in CORPUS.rglob("*.json")
        if not p.relative_to(CORPUS).as_posix().startswith("schemas/")
    } - {rel for rel, _, _ in corpus}
    assert skipped, "expected some non-protocol JSON (candidate.json, artifact-provenance.json)"


# --------------------------------------------------------------------------- constraint trees

# Keywords that do not affect validation (format is an annotation unless a
# format checker is enabled; both sides carry the same format values anyway,
# so it is compared too).
ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description"})
# Our spelling of a pattern -> upstream's spelling of the same language; the
# equivalence is exercised by test_relative_path_pattern_agrees and mutations.
EQUIVALENT_PATTERNS = {
    "^(?!/)(?!(?:.*/)?\\.\\.(?:/|$)).+$(?!\n)": "^(?!/)(?!.*(?:^|/)\\.\\.(?:/|$)).+$(?!\n)",
}


def _resolve(root: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), f"only local $ref expected, got {ref!r}"
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def constraint_tree(node: Any, root: dict[str, Any]) -> Any:
    """Schema with local $refs inlined, annotations dropped and order-free keywords sorted."""
    if not isinstance(node, dict):
        return node
    node = dict(node)
    if "$ref" in node:
        target = constraint_tree(_resolve(root, node.pop("$ref")), root)
        rest = constraint_tree(node, root)
        if set(target) & set(rest):  # both constrain one keyword: keep both, as allOf does
            return {"allOf": [target, rest]}
        return {**target, **rest}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ANNOTATIONS or (key == "additionalProperties" and value is True):
            continue
        if key == "properties":
            out[key] = {name: constraint_tree(sub, root) for name, sub in value.items()}
        elif key in {"items", "additionalProperties", "not", "if", "then", "else"}:
            out[key] = constraint_tree(value, root)
        elif key == "allOf":
            out[key] = [constraint_tree(sub, root) for sub in value]
        elif key in {"required", "enum"}:
            out[key] = sorted(value, key=json.dumps)
        elif key == "type":
            kinds = set(value) if isinstance(value, list) else {value}
            if "number" in kinds:  # every integer is a number
                kinds.discard("integer")
            out[key] = sorted(kinds) if len(kinds) > 1 else kinds.pop()
        elif key == "pattern":
            out[key] = EQUIVALENT_PATTERNS.get(value, value)
        else:
            out[key] = value
    return out


def _upstream_params() -> list[Any]:
    if not UPSTREAM.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=CORPUS_MISSING))]
    return [pytest.param(k, v, id=f"{k}-v{v}") for k, vs in KIND_VERSIONS.items() for v in vs]


def _differences(ours: Any, theirs: Any, where: str = "") -> Iterator[str]:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            yield from _differences(ours.get(key), theirs.get(key), f"{where}/{key}")
    elif isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            yield from _differences(a, b, f"{where}/{index}")
    elif ours != theirs:
        yield f"{where or '/'}: ours={ours!r} upstream={theirs!r}"


@pytest.mark.parametrize(("kind", "version"), _upstream_params())
def test_constraint_tree_equals_upstream(kind: str, version: str) -> None:
    """Enum values and limits no document happens to probe are still compared."""
    theirs = _schema("upstream", kind, version)
    Draft202012Validator.check_schema(theirs)
    ours = _schema("ours", kind, version)
    diffs = list(_differences(constraint_tree(ours, ours), constraint_tree(theirs, theirs)))
    assert not diffs, "\n".join(diffs)


# --------------------------------------------------------------------------- mutations

# Values tried wherever a key of this name occurs: they flip the if/then
# branches (stage, visibility, evidence status, strategy, network) and probe
# enums with near-miss values.
ENUM_PROBES: dict[str, tuple[Json, ...]] = {
    "stage": ("scaffold", "collecting", "frozen", "burned", "Frozen"),
    "visibility": ("public", "hidden", "private"),
    "evidence_status": ("pending", "verified"),
    "status": ("pending", "verified", "excluded", "succeeded", "passed", "failed", "skipped"),
    "strategy": ("all_required", "quorum", "threshold", "majority"),
    "network": ("none", "allowlist", "unrestricted", "open"),
    "kind": ("code", "coding", "benchmarking", "research", "other"),
    "type": ("other", "benchmark", "log", "policy", "system", "unified_diff", "json_diff"),
    "evidence_type": ("verification_result", "run_record", "other", "log"),
    "family": ("bug_fix", "other", "bugfix"),
    "recommendation": ("accept_candidate", "escalate", "merge"),
    "adapter_version": ("0.1", "0.1.1", "0.2.0", "0.3.0", "0.4.0"),
    "adapter": ("deterministic-json-verifier", "deterministic-patch-verifier", "x"),
    "execution_mode": ("metadata_only", "execute"),
    "gpu": ("none", "optional", "required", "maybe"),
}
NUMBERS: tuple[Json, ...] = (-1, 0, 0.5, 1, 1.0, 1.5, 4, 5, 1000, 1001)

Path_ = tuple[str | int, ...]
# Keys whose value selects an if/then branch; a mutation is judged again when
# these differ (see _context).
BRANCH_KEYS = ("stage", "visibility", "evidence_status", "status", "strategy", "network")


# Objects both schemas leave open: edits inside them are accepted by both and
# only cost time, so the walk edits these nodes but does not enter them.
OPEN_OBJECTS = frozenset({"extensions", "required_json"})


def _nodes(value: Json, path: Path_ = ()) -> Iterator[tuple[Path_, Json]]:
    """Every node; of an array only the first and last element (items share one schema)."""
    yield path, value
    if path and path[-1] in OPEN_OBJECTS:
        return
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _nodes(child, (*path, key))
    elif isinstance(value, list) and value:
        for index in sorted({0, len(value) - 1}):
            yield from _nodes(value[index], (*path, index))


def _with(doc: Json, path: Path_, change: Callable[[Json, str | int], None]) -> Json:
    """Copy of doc with change(parent, last_key) applied at path.

    Only the containers along the path are copied; the rest is shared, which is
    safe because validation never mutates its input.
    """
    root = copy.copy(doc)
    parent = root
    for step in path[:-1]:
        child = copy.copy(parent[step])
        parent[step] = child
        parent = child
    change(parent, path[-1])
    return root


def _set(doc: Json, path: Path_, value: Json) -> Json:
    if not path:
        return value

    def put(parent: Json, key: str | int) -> None:
        parent[key] = value

    return _with(doc, path, put)


def _delete(doc: Json, path: Path_) -> Json:
    def drop(parent: Json, key: str | int) -> None:
        del parent[key]

    return _with(doc, path, drop)


def _string_variants(s: str) -> list[str]:
    """Rewrites that probe length limits, id/path/digest patterns and enums.

    Prose (a value with a space) only gets the generic probes: ids, paths,
    digests and enum values never contain spaces, so the rest would be wasted.
    """
    out = ["", "zz-not-in-any-enum", s + "\n", "x" * 257]
    if " " in s:
        return out
    out += ["ab", "abc", s.upper(), "/" + s, "../" + s, s + "/..", "a\n" + s]
    out += ["x" * n for n in (128, 129, 256)]  # id and signature length limits
    if s.startswith("sha256:"):
        hexpart = s[len("sha256:") :]
        out += [s[:-1], s + "0", s[:-1] + "G", s + " ", s + "\n\n", hexpart]
        out += ["SHA256:" + hexpart, "sha256:" + "AB" * 32, "sha256:" + "ab" * 32]
    return out


# (operation, detail, builder of the mutated document). The operation names the
# edit independently of the document's values, so equal edits can be recognised.
Edit = tuple[str, str, Callable[[], Json]]


def _edits(doc: Json, path: Path_, value: Json) -> Iterator[Edit]:
    """Single edits at one node; builders are lazy so skipped edits cost nothing."""
    if path:
        yield "delete", "", lambda: _delete(doc, path)
        yield "null", "", lambda: _set(doc, path, None)
        if not isinstance(value, dict):
            yield "empty object", "", lambda: _set(doc, path, {})
    if isinstance(value, dict):
        yield "unknown key", "", lambda: _set(doc, (*path, "zz_unknown"), 1)
    elif isinstance(value, list):
        yield "empty list", "", lambda: _set(doc, path, [])
        if value:
            yield "first duplicated", "", lambda: _set(doc, path, [value[0], *value])
            yield "null item", "", lambda: _set(doc, path, [*value, None])
        # Reaches item constraints even where the corpus only has empty lists.
        yield "empty-string item", "", lambda: _set(doc, path, [*value, ""])
        yield "text item", "", lambda: _set(doc, path, [*value, "zz-item"])
    elif isinstance(value, bool):
        yield "negated", "", lambda: _set(doc, path, not value)
    elif isinstance(value, int | float):
        for number in NUMBERS:
            yield f"number {number!r}", "", partial(_set, doc, path, number)
        yield "number as string", "", lambda: _set(doc, path, str(value))
    elif isinstance(value, str):
        for index, variant in enumerate(_string_variants(value)):
            yield f"text #{index}", repr(variant[:40]), partial(_set, doc, path, variant)
    if path and isinstance(path[-1], str) and path[-1] in ENUM_PROBES:
        for probe in ENUM_PROBES[path[-1]]:
            yield f"probe {probe!r}", "", partial(_set, doc, path, probe)


def _context(doc: Json, path: Path_) -> tuple[Json, ...]:
    """Branch-selecting values next to the edit: in its parent object and in the node itself.

    Every if/then in these schemas tests a sibling key, so nothing further up
    can change how an edit is judged.
    """
    out: list[Json] = []
    node = doc
    for depth, step in enumerate((*path, None)):
        if isinstance(node, dict) and depth >= len(path) - 1:
            out.extend(node.get(key) for key in BRANCH_KEYS)
        if step is None:
            break
        node = node[step]
    return tuple(out)


def mutations(docs: list[Json]) -> Iterator[tuple[str, Json]]:
    """Labelled single-edit variants of docs of one kind and version.

    An edit is made once per (index-free path, operation, branch context): the
    same edit at the same place in a sibling document adds time, not coverage.
    """
    seen: set[tuple[Any, ...]] = set()
    for number, doc in enumerate(docs):
        edits: list[tuple[Path_, str, str, Callable[[], Json]]] = [
            (path, *edit) for path, value in _nodes(doc) for edit in _edits(doc, path, value)
        ]
        at = ("schema_version",)
        edits += [(at, f"version {v}", "", partial(_set, doc, at, v)) for v in ALL_VERSIONS]
        for path, op, detail, build in edits:
            shape = tuple("[]" if isinstance(step, int) else step for step in path)
            # A string's own form (pattern, length, enum) does not depend on
            # branch context, so string rewrites are made once per place.
            context = () if op.startswith("text #") else _context(doc, path)
            key = (shape, op, context)
            if key in seen:
                continue
            seen.add(key)
            yield f"doc {number} /{'/'.join(map(str, path))} {op} {detail}", build()


def _down_to_work_unit_v01(doc: Json) -> Json:
    """A WorkUnit 0.2 projected onto 0.1's fields (the corpus has no 0.1 WorkUnit)."""
    out = copy.deepcopy(doc)
    out["schema_version"] = "0.1"
    for key in ("requirements", "security", "verification_policy"):
        out.pop(key, None)
    for key in ("project_spend_usd_max", "paid_fallback_allowed"):
        out["budget"].pop(key, None)
    for key in ("source_revision", "created_at"):
        out["provenance"].pop(key, None)
    if out["kind"] == "benchmarking":
        out["kind"] = "other"
    for item in out["validators"]:
        if item["type"] == "benchmark":
            item["type"] = "other"
    return out


# Optional fields that no corpus document uses, filled in on one copy per kind
# so that mutations reach them too. Each enriched copy must be valid upstream.
_MODEL = {"provider": "example", "name": "model-x", "version": "1"}
ENRICH: dict[str, tuple[tuple[Path_, Json], ...]] = {
    "work-unit": (
        (
            ("dependencies",),
            [
                {
                    "work_unit_id": "other/unit",
                    "relationship": "requires",
                    "condition": "after merge",
                }
            ],
        ),
        (("inputs", 0, "digest"), "sha256:" + "0" * 64),
        (("validators", 0, "command"), ["pytest", "-q"]),
        (("provenance", "created_at"), "2025-01-01T00:00:00Z"),
        (("verification_policy", "strategy"), "quorum"),
        (("verification_policy", "quorum"), 2),
    ),
    "result-manifest": (
        (("worker", "model"), _MODEL),
        (("resources", "cpu_seconds"), 1.5),
        (("resources", "max_rss_mb"), 64),
        (("provenance", "environment", "container_image"), "registry.example/img:1"),
    ),
    "verification-result": (
        (("verifier", "model"), _MODEL),
        (("resources", "cpu_seconds"), 1.5),
        (("resources", "max_rss_mb"), 64),
        (("provenance", "environment", "container_image"), "registry.example/img:1"),
        (
            ("findings",),
            [
                {
                    "severity": "low",
                    "category": "scope",
                    "summary": "touches x",
                    "path": "a/b.py",
                    "line": 3,
                }
            ],
        ),
        (("attestation",), {"signer_id": "key-1", "algorithm": "ed25519", "signature": "c2ln"}),
    ),
}


def _enriched(kind: str, doc: Json) -> Json:
    out = copy.deepcopy(doc)
    for path, value in ENRICH.get(kind, ()):
        parent = out
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = copy.deepcopy(value)
    return out


def _trimmed(value: Json) -> Json:
    """Copy keeping only the first and last item of every array.

    Mutations only edit those items, and a shorter document validates faster.
    No constraint here spans items beyond uniqueness and minItems <= 1, so
    trimming does not change a verdict.
    """
    if isinstance(value, dict):
        return {key: _trimmed(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_trimmed(item) for item in value[:1] + value[1:][-1:]]
    return value


def _subjects_by_kind_version() -> dict[tuple[str, str], list[Json]]:
    """Corpus documents by (kind, version), each group ending with one enriched copy."""
    groups: dict[tuple[str, str], list[Json]] = {}
    for _, kind, doc in _corpus_docs():
        version = _version(kind, doc)
        groups.setdefault((kind, version), []).append(_trimmed(doc))
    for (kind, _), docs in list(groups.items()):
        if kind in ENRICH:
            docs.append(_enriched(kind, docs[0]))
    # The corpus has no WorkUnit 0.1: project every 0.2 one (enriched copy included).
    groups[("work-unit", "0.1")] = [
        _down_to_work_unit_v01(doc) for doc in groups.get(("work-unit", "0.2"), [])
    ]
    return groups


def _mutation_params() -> list[Any]:
    if not UPSTREAM.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=CORPUS_MISSING))]
    return [pytest.param(k, v, id=f"{k}-v{v}") for k, vs in KIND_VERSIONS.items() for v in vs]


@pytest.mark.parametrize(("kind", "version"), _mutation_params())
def test_mutations_same_verdict(kind: str, version: str) -> None:
    docs = _subjects_by_kind_version()[(kind, version)]
    # Synthesized subjects (the enriched copy, the 0.1 projections) must be
    # valid upstream, or their mutations would probe little.
    assert accepts("upstream", kind, version, docs[-1]), "synthesized subject invalid upstream"
    disagreements = []
    verdicts: dict[bool, int] = {True: 0, False: 0}
    for label, mutant in mutations(docs):
        theirs = accepts("upstream", kind, version, mutant)
        ours = accepts("ours", kind, version, mutant)
        verdicts[theirs] += 1
        if ours != theirs:
            disagreements.append(f"{label}: ours={ours} upstream={theirs}")
    assert not disagreements, f"{len(disagreements)} disagreements:\n" + "\n".join(
        disagreements[:40]
    )
    # A set of mutations upstream always refuses (or always accepts) tests little.
    assert verdicts[False] > 0
    assert verdicts[True] > 0, verdicts


# Hand-picked edits that both sides must refuse (not merely agree on).
HAND_MUTATIONS: dict[str, tuple[str, Path_, Json]] = {
    "work-unit missing objective": (
        "examples/work-units/phase0-smoke.work-unit.json",
        ("objective",),
        ...,
    ),
    "work-unit extra property": (
        "examples/work-units/phase0-smoke.work-unit.json",
        ("surprise",),
        True,
    ),
    "work-unit wrong schema_version": (
        "examples/work-units/phase0-smoke.work-unit.json",
        ("schema_version",),
        "0.3",
    ),
    "work-unit id with trailing newline": (
        "examples/work-units/phase0-smoke.work-unit.json",
        ("id",),
        "phase0/smoke-work-unit\n",  # the document's own id plus a newline
    ),
    "result-manifest digest upper-case hex": (
        "examples/results/phase0-smoke.result-manifest.json",
        ("provenance", "work_unit_digest"),
        "sha256:" + "A" * 64,
    ),
    "result-manifest digest with trailing newline": (
        "examples/results/phase0-smoke.result-manifest.json",
        ("provenance", "work_unit_digest"),
        "sha256:" + "a" * 64 + "\n",
    ),
    "verification-result missing checks": (
        "examples/results/phase0-smoke.verification-result.json",
        ("checks",),
        ...,
    ),
    "evaluator-plan policy switched off": (
        "verification/fixtures/patch-smoke-evaluator-plan-v0.2.json",
        ("policy", "require_verifier_distinct_from_worker"),
        False,
    ),
    "evaluator-plan adapter of another version": (
        "verification/fixtures/patch-smoke-evaluator-plan-v0.2.json",
        ("verifier", "adapter_version"),
        "0.3.0",
    ),
    "cohort frozen without definition_digest": (
        "benchmarks/phase-b2-first-five-v2/cohort.json",
        ("definition_digest",),
        ...,
    ),
    "cohort task path escapes": (
        "benchmarks/phase-b2-first-five/cohort.json",
        ("tasks", 0, "work_unit", "path"),
        "../x.json",
    ),
    "cohort task path absolute": (
        "benchmarks/phase-b2-first-five/cohort.json",
        ("tasks", 0, "work_unit", "path"),
        "/x.json",
    ),
}


@pytest.mark.parametrize("case", sorted(HAND_MUTATIONS))
def test_hand_mutation_refused_by_both(case: str) -> None:
    if not UPSTREAM.is_dir():
        pytest.skip(CORPUS_MISSING)
    rel, path, value = HAND_MUTATIONS[case]
    doc = _corpus_file(rel)
    kind = kind_of(doc)
    assert kind is not None
    version = _version(kind, doc)
    assert accepts("upstream", kind, version, doc), f"{rel} should start out valid"
    mutant = _delete(doc, path) if value is ... else _set(doc, path, value)
    assert not accepts("upstream", kind, version, mutant), f"upstream accepted: {case}"
    assert not accepts("ours", kind, version, mutant), f"ours accepted: {case}"


# --------------------------------------------------------------------------- string properties

ID_LIKE = st.one_of(
    st.from_regex(re.compile(r"[a-z0-9][a-z0-9._/-]{0,130}\n?", re.ASCII), fullmatch=True),
    st.text(alphabet="az09._/-A \n", max_size=132),
)
DIGEST_LIKE = st.builds(
    lambda prefix, hexpart, tail: prefix + hexpart + tail,
    st.sampled_from(["sha256:", "sha256", "SHA256:", "sha512:", ""]),
    st.text(alphabet="0123456789abcdefA", min_size=62, max_size=66),
    st.sampled_from(["", "\n", "\n\n", " ", "g"]),
)
PATH_LIKE = st.text(alphabet="a./\n", max_size=12)

# (corpus file, path to a string slot inside it)
SLOTS: dict[str, tuple[str, Path_]] = {
    "id": ("examples/work-units/phase0-smoke.work-unit.json", ("id",)),
    "digest": (
        "examples/results/phase0-smoke.result-manifest.json",
        ("provenance", "work_unit_digest"),
    ),
    "path": ("benchmarks/phase-b2-first-five/cohort.json", ("tasks", 0, "work_unit", "path")),
}


def _slot_agrees(slot: str, value: str) -> None:
    if not UPSTREAM.is_dir():
        pytest.skip(CORPUS_MISSING)
    rel, path = SLOTS[slot]
    doc = _set(_corpus_file(rel), path, value)
    kind = kind_of(doc)
    assert kind is not None
    version = _version(kind, doc)
    assert accepts("ours", kind, version, doc) == accepts("upstream", kind, version, doc), repr(
        value
    )


@settings(max_examples=200, deadline=None)
@given(ID_LIKE)
def test_id_pattern_agrees(value: str) -> None:
    _slot_agrees("id", value)


@settings(max_examples=200, deadline=None)
@given(DIGEST_LIKE)
def test_digest_pattern_agrees(value: str) -> None:
    _slot_agrees("digest", value)


@settings(max_examples=200, deadline=None)
@given(PATH_LIKE)
def test_relative_path_pattern_agrees(value: str) -> None:
    _slot_agrees("path", value)
