"""Releases of the verifiers: which code computed a recorded verdict.

Every VerificationResult names the release that judged it, in
``extensions["org.provledger.verifier.package_version"]`` and in
``provenance.environment.tool_versions["provledger-verifiers"]``. Invariant: a
release's verdicts never change. Re-running a recorded result (replay) uses the release
the result names, so a result recorded by an older release re-derives its own verdict;
a change of verdict for any input is a new release, listed below with what it changed
(docs/VERIFIERS.md, "Verifier releases").

The adapter versions (0.1, 0.1.1, 0.2.0, 0.3.0) are upstream's names of the semantic
rules, bound by the plans; a release of the verifiers never changes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from verifiers.diff import READING_0_1_0, READING_0_2_0, DiffReading
from verifiers.errors import SovereigntyError

RELEASE_KEY = "org.provledger.verifier.package_version"
TOOL_NAME = "provledger-verifiers"


@dataclass(frozen=True)
class Release:
    """One release: its version string and how it reads patches."""

    version: str
    diff: DiffReading
    changes: str


_RELEASES = (
    Release("0.1.0", READING_0_1_0, "first release"),
    Release(
        "0.2.0",
        READING_0_2_0,
        "reads as git does: hunks starting at line 0 with lines, hunk numbers of up to 15"
        " digits, runs of spaces and TABs around the diff --git names",
    ),
)
RELEASES: Mapping[str, Release] = MappingProxyType({r.version: r for r in _RELEASES})
CURRENT = _RELEASES[-1]


def release(version: object) -> Release:
    """The release named ``version``; ``SOV-VERIFIER-RELEASE`` when there is none."""
    found = RELEASES.get(version) if isinstance(version, str) else None
    if found is None:
        raise SovereigntyError(
            "SOV-VERIFIER-RELEASE",
            "verifier release",
            version,
            f"one of {', '.join(RELEASES)}",
        )
    return found


def release_of(result: Mapping[str, object]) -> Release:
    """The release a stored VerificationResult names (``SOV-VERIFIER-RELEASE`` when it
    names none this code has, e.g. a result written by upstream's verifier)."""
    extensions = result.get("extensions")
    named = extensions.get(RELEASE_KEY) if isinstance(extensions, Mapping) else None
    return release(named)
