"""Exception hierarchy of the ledger package, grouped by fault.

Every error class carries ``exit_code`` (what the CLI exits with) and ``finding_code``
(a stable name an audit reports it under). The CLI maps exceptions to exit codes in one
place, ``ledger.cli.common.ProvGroup.invoke``; no command picks an exit code itself.
Messages are one line: "what, got X, expected Y".

Faults: ``UsageError`` (2, arguments that do not make a command), ``InputError`` (3, the
caller's input is bad or names nothing), ``RuleViolation``
(4, refused by ledger rules), ``StorageError`` (3, the database cannot be used),
``CheckFailed`` (1, a check found a problem). ``Reported`` failures are outcomes a
command has already printed in full: the handler exits with their code and adds nothing.
"""

from __future__ import annotations


class LedgerError(Exception):
    """Root of every provledger error. ``exit_code`` is what the CLI exits with."""

    exit_code = 3
    finding_code = "error"


class UsageError(LedgerError):
    """A command given a combination of arguments it cannot run (exit 2, like click's)."""

    exit_code = 2
    finding_code = "usage"


class InputError(LedgerError):
    """Bad input: parse, canonical form, schema, unknown kind (exit 3)."""

    exit_code = 3
    finding_code = "input-invalid"


class ParseError(InputError):
    """The document is not strict JSON."""

    finding_code = "parse-error"


class InvalidUtf8Error(ParseError):
    """The bytes are not valid UTF-8."""


class DuplicateKeyError(ParseError):
    """An object has the same member name twice."""


class NonFiniteNumberError(ParseError):
    """NaN, Infinity or a number that overflows to infinity."""


class IntegerRangeError(ParseError):
    """An integer outside the I-JSON safe range +-(2**53 - 1)."""


class LoneSurrogateError(ParseError):
    """A string holds an unpaired UTF-16 surrogate escape."""


class TrailingDataError(ParseError):
    """Non-whitespace bytes follow the JSON value."""


class NestingDepthError(ParseError):
    """Arrays/objects nest deeper than the configured limit."""


class DocumentTooLargeError(ParseError):
    """The document is larger than the configured size limit."""


class CanonicalFormError(InputError):
    """Bytes that must be canonical (RFC 8785) are not."""

    finding_code = "not-canonical"


class SchemaError(InputError):
    """The document does not validate against its kind's schema."""

    finding_code = "schema-invalid"


class KindError(InputError):
    """The document's kind is unknown, ambiguous, or not the one requested."""

    finding_code = "kind-invalid"


class KeyFileError(InputError):
    """A key file cannot be read, is malformed, or is unsafe (permissions)."""

    finding_code = "key-file-invalid"


class NotFound(InputError):
    """A digest, id or file named by the user does not exist (exit 3)."""

    finding_code = "not-found"


class RuleViolation(LedgerError):
    """Refused by ledger rules: append-only, lifecycle, binding (exit 4)."""

    exit_code = 4
    finding_code = "rule-violation"


class AppendOnlyError(RuleViolation):
    """An attempt to change or remove history."""

    finding_code = "append-only"


class StorageError(LedgerError):
    """The database cannot be written (read-only, full, locked past the timeout)."""

    exit_code = 3
    finding_code = "storage-error"


class CheckFailed(LedgerError):
    """A verification or audit found a problem (exit 1)."""

    exit_code = 1
    finding_code = "check-failed"


class IntegrityError(CheckFailed):
    """A stored row disagrees with the bytes it indexes: the file was edited (exit 1)."""


class IdentityError(RuleViolation):
    """A verifier identity or revocation is refused: wrong authority key, key bound elsewhere."""

    finding_code = "identity-refused"


class AttestationError(InputError):
    """An attestation object or DSSE envelope cannot be read or rebuilt (exit 3)."""

    finding_code = "attestation-invalid"


class Reported(LedgerError):
    """A failed outcome the command has already printed in full (report, summary).

    The handler exits with ``exit_code`` and prints nothing more: the output is the
    explanation. Raise a subclass, never pick a number at the raise site.
    """

    def __init__(self, what: str = "") -> None:
        super().__init__(what)


class ProblemsReported(Reported, CheckFailed):
    """The printed report lists problems a check found (exit 1)."""


class RejectionsReported(Reported, InputError):
    """The printed summary lists inputs that were rejected as bad (exit 3)."""


class RefusalsReported(Reported, RuleViolation):
    """The printed summary lists refusals by ledger rules (exit 4)."""


def reported_for(exit_codes: list[int]) -> Reported:
    """The ``Reported`` outcome for failures already printed, given their exit codes."""
    worst = max(exit_codes)
    if worst >= RuleViolation.exit_code:
        return RefusalsReported()
    if worst == InputError.exit_code:
        return RejectionsReported()
    return ProblemsReported()
