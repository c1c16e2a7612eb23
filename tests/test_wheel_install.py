"""``provledger calibrate`` works from an installed wheel: the fixture is package data.

Builds the wheel from a copy of the source tree (``pip wheel --no-deps``), installs it
into a fresh virtual environment (its dependencies come from the test environment's
site-packages, the project itself only from the wheel) and runs the installed command.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

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


def test_calibrate_runs_from_an_installed_wheel(tmp_path: Path) -> None:
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
    where = _run(python, "-c", "import verifiers; print(verifiers.__file__)", cwd=tmp_path)
    assert Path(where.strip()).is_relative_to(site)

    out = json.loads(_run(fresh / "bin" / "provledger", "calibrate", "--json", cwd=tmp_path))
    assert Path(out["fixture"]).is_relative_to(site)
    assert out["rows"] and all(row["matches_expectation"] for row in out["rows"])
