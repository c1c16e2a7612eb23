"""Releases of the verifiers: a recorded verdict is re-derived by the release it names.

The digests below were recorded by release 0.1.0 itself (the verifiers as they were
before release 0.2.0 existed), with this clock, on the calibration fixture and four
variants of its repair patch. Release 0.1.0 of today's code must give the same bytes:
otherwise a result stored in a ledger would no longer re-verify.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_verifiers_runner import Case

from verifiers.errors import SovereigntyError
from verifiers.releases import CURRENT, RELEASE_KEY, TOOL_NAME, release, release_of

HEADER = "diff --git a/tools/cohort_tool.py b/tools/cohort_tool.py"
HUNK = "@@ -79,14 +79,14 @@"
VARIANTS = {
    "repair": (HUNK, HUNK),
    "line-zero": (HUNK, "@@ -0,14 +0,14 @@"),
    "header-two-spaces": (HEADER, HEADER.replace(" b/", "  b/")),
    "digits-13": (HUNK, "@@ -1000000000079,14 +1000000000079,14 @@"),
}
# (status, result digest) recorded by release 0.1.0, then what release 0.2.0 gives.
RECORDED_BY_0_1_0 = {
    "repair": ("passed", "3a9277d4584cdc0d1f8ec879afd1a90e90993e415c02d0977f78c3ee1ca5517c"),
    "line-zero": ("failed", "93490f7e95d10de985f196bc7ff2aacce369a58010feee578529555d33788ef7"),
    "header-two-spaces": (
        "failed",
        "2b5546bbb1dee0280d8277a1b2fc837482b2b3a9622a5161857e76a3022f16c4",
    ),
    "digits-13": ("failed", "586377011d78449c7136f2685aec2e30b458faa0e318a8c15836cf041b2b398d"),
    "decoy": ("failed", "3248859b218b27934f6d441237e3af7b9b74d688acd39a39b8ed8f64a0eb7652"),
}
STATUS_0_2_0 = {
    "repair": "passed",
    "line-zero": "passed",
    "header-two-spaces": "passed",
    "digits-13": "passed",
    "decoy": "failed",
}


def case_for(tmp: Path, name: str) -> Case:
    if name == "decoy":
        return Case(tmp, candidate="decoy")
    case = Case(tmp)
    old, new = VARIANTS[name]
    patch = (case.root / "candidate.patch").read_text(encoding="utf-8")
    case.write("candidate.patch", patch.replace(old, new, 1).encode("utf-8"))
    return case


@pytest.mark.parametrize("name", sorted(RECORDED_BY_0_1_0))
def test_release_0_1_0_gives_the_bytes_it_recorded(tmp_path: Path, name: str) -> None:
    case = case_for(tmp_path, name)
    old = case.run(release_version="0.1.0")
    assert (old.status, old.result_digest) == (
        RECORDED_BY_0_1_0[name][0],
        "sha256:" + RECORDED_BY_0_1_0[name][1],
    )
    assert release_of(old.result).version == "0.1.0"
    new = case.run()
    assert new.status == STATUS_0_2_0[name]
    assert release_of(new.result) is CURRENT
    assert new.result["provenance"]["environment"]["tool_versions"][TOOL_NAME] == "0.2.0"
    # Re-running a result under the release it names gives its own bytes again.
    again = case.run(release_version=release_of(new.result).version)
    assert again.result_bytes == new.result_bytes


def test_an_unknown_release_is_a_sovereignty_refusal(tmp_path: Path) -> None:
    case = Case(tmp_path)
    for named in ("0.3.0", "", None, 1):
        with pytest.raises(SovereigntyError) as info:
            release(named)
        assert info.value.code == "SOV-VERIFIER-RELEASE"
    with pytest.raises(SovereigntyError, match="SOV-VERIFIER-RELEASE"):
        case.run(release_version="9.9.9")
    upstream_result: dict[str, object] = {"extensions": {"org.idkmesh.x": 1}}
    with pytest.raises(SovereigntyError, match="SOV-VERIFIER-RELEASE"):
        release_of(upstream_result)
    assert release_of({"extensions": {RELEASE_KEY: "0.1.0"}}).version == "0.1.0"
