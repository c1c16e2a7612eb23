"""provledger works from an installed wheel: ``calibrate`` (the fixture is package data)
and every example of docs/API.md, with no ``install_*`` call (the IDKMesh plug-ins come
from the wheel's own entry points).

Builds the wheel from a copy of the source tree (``pip wheel --no-deps``), installs it
into a fresh virtual environment (its dependencies come from the test environment's
site-packages, the project itself only from the wheel) and runs the installed command
and the page's program there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_docs import EXAMPLES
from test_api_docs import run_page

ROOT = Path(__file__).resolve().parents[1]
SKIP = shutil.ignore_patterns(
    ".venv",
    ".git",
    "__pycache__",
    "build",
    "dist",
    "*.egg-info",
    ".*_cache",
    ".hypothesis",
    "tests",
    "*.db*",
    "bench-out",
)


def _run(*args: str | Path, cwd: Path) -> str:
    # ``cwd`` is never the repository: ``python -c`` would import the source tree from it.
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, cwd=cwd, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the fresh environment, its site-packages) with only the wheel of the project."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=SKIP)
    wheels = tmp_path / "wheels"
    pip = (sys.executable, "-m", "pip")
    _run(
        *pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheels, source, cwd=tmp_path
    )
    [wheel] = sorted(wheels.glob("provledger-*.whl"))

    fresh = tmp_path / "fresh"
    _run(sys.executable, "-m", "venv", "--without-pip", fresh, cwd=tmp_path)
    python = fresh / "bin" / "python"
    site = Path(
        _run(
            python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path
        ).strip()
    )
    # Dependencies only: the project is not importable from here (it is installed as an
    # editable finder, whose .pth file is not processed for a path added this way).
    (site / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(*pip, "--python", python, "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp_path)
    for package in ("ledger", "verifiers", "cohorts"):
        where = _run(python, "-c", f"import {package}; print({package}.__file__)", cwd=tmp_path)
        assert Path(where.strip()).is_relative_to(site)
    yield fresh, site


def test_calibrate_runs_from_an_installed_wheel(fresh: tuple[Path, Path], tmp_path: Path) -> None:
    venv, site = fresh
    out = json.loads(_run(venv / "bin" / "provledger", "calibrate", "--json", cwd=tmp_path))
    assert Path(out["fixture"]).is_relative_to(site)
    assert out["rows"] and all(row["matches_expectation"] for row in out["rows"])


def test_the_api_page_runs_from_an_installed_wheel(
    fresh: tuple[Path, Path], tmp_path: Path
) -> None:
    venv, _ = fresh
    assert EXAMPLES.is_dir()
    done = run_page(venv / "bin" / "python", tmp_path, "ledger.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "install_" not in (tmp_path / "api_examples.py").read_text("utf-8")
