"""Exception hierarchy of the ledger package.

Every error carries ``exit_code``; the CLI maps exceptions to exit codes in one place
(``ledger.cli.common``). Messages are one line: "what, got X, expected Y".
"""

from __future__ import annotations


class LedgerError(Exception):
    """Root of every provledger error. ``exit_code`` is what the CLI exits with."""

    exit_code = 3


class InputError(LedgerError):
    """Bad input: parse, canonical form, schema, unknown kind (exit 3)."""

    exit_code = 3


class ParseError(InputError):
    """The document is not strict JSON."""


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


class SchemaError(InputError):
    """The document does not validate against its kind's schema."""


class KindError(InputError):
    """The document's kind is unknown, ambiguous, or not the one requested."""


class KeyFileError(InputError):
    """A key file cannot be read, is malformed, or is unsafe (permissions)."""


class NotFound(InputError):
    """A digest, id or file named by the user does not exist (exit 3)."""


class RuleViolation(LedgerError):
    """Refused by ledger rules: append-only, lifecycle, binding (exit 4)."""

    exit_code = 4


class AppendOnlyError(RuleViolation):
    """An attempt to change or remove history."""


class StorageError(LedgerError):
    """The database cannot be written (read-only, full, locked past the timeout)."""

    exit_code = 3


class CheckFailed(LedgerError):
    """A verification or audit found a problem (exit 1)."""

    exit_code = 1


class IntegrityError(CheckFailed):
    """A stored row disagrees with the bytes it indexes: the file was edited (exit 1)."""


class IdentityError(RuleViolation):
    """A verifier identity or revocation is refused: wrong authority key, key bound elsewhere."""


class AttestationError(InputError):
    """An attestation object or DSSE envelope cannot be read or rebuilt (exit 3)."""
