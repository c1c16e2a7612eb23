"""Exception hierarchy of the verifiers package.

``VerifierError`` is the package root. Subclasses mix in the ledger base whose exit
code they share, so ``ledger.cli.common.ProvGroup`` maps them without knowing this package.
Messages are one line: "what, got X, expected Y".
"""

from __future__ import annotations

from ledger.errors import CheckFailed, InputError, LedgerError, RuleViolation


class VerifierError(LedgerError):
    """Root of every error raised by ``verifiers``."""


class DiffError(VerifierError, InputError):
    """The candidate patch is not a structurally valid unified diff (exit 3).

    ``patch_line`` is the 1-based line of the patch where parsing stopped (one past
    the last line when the patch ended early; 0 when the bytes are unreadable).
    ``rule`` is the stable name of the structural rule that refused the patch (the
    rules are listed in docs/VERIFIERS.md, "Diff structure").
    """

    exit_code = 3

    def __init__(
        self, patch_line: int, found: str, expected: str, what: str = "", *, rule: str
    ) -> None:
        self.patch_line = patch_line
        self.found = found
        self.expected = expected
        self.rule = rule
        self.what = what or "malformed unified diff"
        super().__init__(
            f"{self.what} at patch line {patch_line}, got {found}, expected {expected}"
        )


class PatchApplyError(VerifierError, CheckFailed):
    """A parsed patch does not apply to the given tree (exit 1)."""

    exit_code = 1


class SovereigntyError(VerifierError, RuleViolation):
    """An Evaluator Sovereignty rule refused the evaluation (exit 4).

    ``code`` is stable (e.g. ``SOV-BINDING-DIGEST``); the message shows both values.
    """

    exit_code = 4

    def __init__(self, code: str, what: str, got: object, expected: object) -> None:
        self.code = code
        self.got = got
        self.expected = expected
        super().__init__(f"{code}: {what}, got {_show(got)}, expected {_show(expected)}")


class EvidenceMismatch(VerifierError, RuleViolation):
    """Evidence would be recorded against an object it is not about (exit 4).

    E.g. behavioral evidence for one patch attached to a VerificationResult that
    observed a different candidate.
    """

    exit_code = 4


class ProbeError(VerifierError, InputError):
    """A behavioral probe specification is unusable (exit 3)."""

    exit_code = 3


class SandboxUnavailable(VerifierError, RuleViolation):
    """Behavioral probes would run without confinement; refused (exit 4).

    The message names the install command; ``--unsandboxed`` is the explicit way past.
    """

    exit_code = 4


def _show(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
