"""``cohorts`` and ``verifiers`` read the protocol objects through the typed model (AST).

The typed protocol model (``verifiers.model``: ``Cohort``, ``CohortView``, ``Task``,
``Attempt``, ``WorkUnit``, ``EvaluatorPlan``, ``ResultManifest``, ``VerificationResult``)
is the one place that knows where a member of a WorkUnit, plan, manifest, result or
cohort lives and how a malformed one reads. This test fails when a module of ``cohorts``
or ``verifiers`` (the model and the shipped fixtures aside) reads such a member by key:
``cohort.get("stage")``, ``task["evidence"]``, ``at(task, "work_unit", "id")``,
``manifest.at("worker", "id")`` (a typed member belongs in the model), or a call of a
module's own path reader (a function that hands its parameters to ``at``, ``.get`` or
``[...]``) with such a key: ``text("decision_support", "rationale")``. The keys are
members only those objects have (``PROTOCOL_MEMBERS``); the provledger records that
cohorts also read (burn notices, bindings, calibration and quarantine records) use other
names. A place that reads one of these keys from something else, or writes a document,
is listed in ``ALLOWED`` with the reason, and every entry must still be needed (the list
only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Members only the protocol objects and cohorts have (WorkUnit, EvaluatorPlan,
#: ResultManifest, VerificationResult, BenchmarkCohort and its tasks and attempts).
PROTOCOL_MEMBERS = frozenset(
    {
        "tasks",
        "stage",
        "evidence",
        "attempts",
        "attempt_id",
        "evaluator",
        "work_unit",
        "plan_id",
        "plan_digest",
        "verification_result",
        "result_manifest",
        "declared_structural_signatures",
        "minimum_final_tasks",
        "required_families",
        "exclusion_reason",
        "family",
        "split",
        "evidence_requirements",
        "verification_policy",
        "required_validator_ids",
        "decision_support",
        "work_unit_id",
        "work_unit_version",
        "produced_artifacts",
        "objective",
        "rationale",
        "finished_at",
        "provenance",
        "binding",
        "worker",
        "verifier",
        "work_unit_digest",
        "result_manifest_digest",
        "verifier_config_digest",
    }
)

#: (path, function or "*" for the whole module) -> why it may read these keys by name.
ALLOWED: dict[tuple[str, str], str] = {
    ("cohorts/browse/pages.py", "*"): "reads `cohort audit --json`'s report, not a protocol object",
    ("cohorts/cli.py", "*"): "prints the rows of `cohort list --json`",
    ("cohorts/audit.py", "lines"): "prints a binding record's named plans {task, plan_id, ...}",
    ("cohorts/binding.py", "build_binding"): "sorts the binder's named plans {task, plan_id}",
    ("cohorts/definition.py", "*"): (
        "the definition digest's projection copies members as recorded and refuses a"
        " missing one (the model reads it as None)"
    ),
    ("cohorts/service.py", "_calibration_plan_problem"): "a calibration record's plan_digest",
    ("cohorts/service.py", "_outcome_plan"): "appends an attempt to a copy of the cohort (a write)",
    ("cohorts/browse/project.py", "_binding"): "a binding record's named plans {task, plan_id}",
    ("cohorts/browse/project.py", "_preregistration"): "the seq of each step, keyed by its name",
    ("verifiers/sovereignty.py", "*"): "judges raw inputs: one rule is that they are objects",
    ("verifiers/api.py", "_record_calibration"): "a calibration record's plan_digest",
    ("verifiers/cli.py", "_print_run"): "prints run-verifier's --json (its plan_digest)",
}


def path_readers(tree: ast.AST) -> frozenset[str]:
    """Names of the module's own path readers: functions (``def`` or a lambda bound to a
    name, at any depth) that use one of their parameters as a key, in ``at(v, *path)``,
    ``v.get(key)`` or ``v[key]``; a call of one with a protocol member reads by key."""
    readers: set[str] = set()
    function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name, function = node.name, node
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Lambda)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            name, function = node.targets[0].id, node.value
        else:
            continue
        if _keys_by_parameter(function):
            readers.add(name)
    return frozenset(readers)


def _keys_by_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> bool:
    """``function`` reads a member at a key (or path) given by one of its parameters."""
    arguments = function.args
    params = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    params |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}

    def named(node: ast.AST) -> bool:
        inner = node.value if isinstance(node, ast.Starred) else node
        return isinstance(inner, ast.Name) and inner.id in params

    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "at":
            keys = node.args[1:]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "setdefault")
        ):
            keys = node.args[:1]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            keys = [node.slice]
        else:
            continue
        if any(named(key) for key in keys):
            return True
    return False


def protocol_reads(source: str) -> list[tuple[int, str, str]]:
    """(line, enclosing function or "*", key) of every read of a protocol member by key."""
    found: list[tuple[int, str, str]] = []
    tree = ast.parse(source)
    readers = path_readers(tree) | {"at"}

    def key_of(node: ast.AST) -> str | None:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "setdefault")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in PROTOCOL_MEMBERS
        ):
            return str(node.args[0].value)
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value in PROTOCOL_MEMBERS
        ):
            return str(node.slice.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in readers
        ) or (
            # a document's own path reader: ``manifest.at("worker", "id")``
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "at"
        ):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and arg.value in PROTOCOL_MEMBERS:
                    return str(arg.value)
        return None

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        key = key_of(node)
        if key is not None:
            found.append((getattr(node, "lineno", 0), function, key))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "*")
    return found


def _sources() -> list[Path]:
    """Every module of ``cohorts`` and ``verifiers`` but the model and the fixtures."""
    paths = [*(ROOT / "cohorts").rglob("*.py"), *(ROOT / "verifiers").rglob("*.py")]
    skip = (ROOT / "verifiers" / "model", ROOT / "verifiers" / "fixtures")
    return sorted(p for p in paths if not any(p.is_relative_to(s) for s in skip))


def _reads() -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        for line, function, key in protocol_reads(path.read_text("utf-8")):
            out.setdefault((rel, function), []).append(f"{rel}:{line} ({function}): {key!r}")
    return out


def _allowed(place: tuple[str, str]) -> bool:
    return any(p in ALLOWED for p in (place, (place[0], "*")))


def test_protocol_objects_are_read_through_the_model() -> None:
    bad = [hit for place, hits in _reads().items() if not _allowed(place) for hit in hits]
    assert not bad, "read through verifiers.model (add a typed member if missing):\n" + "\n".join(
        bad
    )


def test_every_allowed_place_still_reads_by_key() -> None:
    reads = _reads()
    used = {place for place in ALLOWED if any(p == place or (p[0], "*") == place for p in reads)}
    assert used == set(ALLOWED), f"stale ALLOWED entries: {sorted(set(ALLOWED) - used)}"


def test_the_read_check_catches_the_known_cases() -> None:
    source = (
        "def gate(cohort, task, notice, doc):\n"
        "    a = cohort.get('stage')\n"
        "    b = task['evidence']\n"
        "    c = at(task, 'work_unit', 'id')\n"
        "    d = notice.get('cohort_id')\n"  # a burn notice: not a protocol member
        "    doc['stage'] = 'frozen'\n"  # a write
        "    e = model.stage\n"
        "    f = manifest.at('worker', 'id')\n"  # a document's path reader, by key
        "    g = manifest.at('logs')\n"  # not a member only protocol objects have
    )
    assert protocol_reads(source) == [
        (2, "gate", "stage"),
        (3, "gate", "evidence"),
        (4, "gate", "work_unit"),
        (8, "gate", "worker"),
    ]


def test_the_read_check_catches_calls_of_a_path_reader() -> None:
    """A module's own helper that reads a member at the path it is given (the browse
    index's row builders once did: ``text("decision_support", "rationale")``) hides the
    key from a check of ``at``/``.get``/``[...]`` alone; calls of it count as reads."""
    source = (
        "def text(*path):\n"
        "    return lambda value: as_str(at(value, *path))\n"
        "def member(value, key):\n"
        "    return value.get(key)\n"
        "item = lambda value, key: value[key]\n"
        "def rows():\n"
        "    def nested(*path):\n"
        "        return at(doc, 'x', *path)\n"
        "    a = text('decision_support', 'rationale')\n"
        "    b = member(doc, 'objective')\n"
        "    c = item(doc, 'finished_at')\n"
        "    d = nested('work_unit_id')\n"
        "    e = text('key_id')\n"  # a revocation record's member: not a protocol one
        "    f = column('objective')\n"  # not a reader of this module: a column's name
    )
    assert path_readers(ast.parse(source)) == {"text", "member", "item", "nested"}
    assert protocol_reads(source) == [
        (9, "rows", "decision_support"),
        (10, "rows", "objective"),
        (11, "rows", "finished_at"),
        (12, "rows", "work_unit_id"),
    ]
