"""scripts/bench_store.py (the store-only import curve) runs and reports every slice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_store_only_curve(tmp_path: Path) -> None:
    out = tmp_path / "store.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench_store.py"),
            "--objects",
            "3000",
            "--slice",
            "1000",
            "--batch",
            "500",
            "--workdir",
            str(tmp_path),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["objects"] == 3000 and result["batch"] == 500
    assert [s["first"] for s in result["slices"]] == [0, 1000, 2000]
    assert all(s["objects"] == 1000 and s["rate"] > 0 for s in result["slices"])
    assert result["db_over_data"] > 1
    assert result["package"].endswith("ledger")
