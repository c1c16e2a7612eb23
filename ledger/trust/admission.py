"""Admission: the one rule set every append passes, inside the append transaction.

Modelled on python-tuf's ``TrustedMetadataSet``: nothing enters the trusted state except
through one gate that checks it against the state it would extend. The store calls
``AdmissionPolicy.admit`` after it has written a batch's rows and before ``COMMIT``
(``ledger.store.sqlite.SQLiteStore.append_many``), so the rules see the batch at its
real log positions and a refusal rolls the whole batch back. No write path can skip it.

Rules, in order; every refusal of a batch is collected before raising:

1. **Attestations verify.** Every new attestation object must be valid as judged at its
   own log position (``ledger.trust.judgement.check_attestation``): it parses, its
   subject is stored, its payloadType is the one the ledger defines for the subject's
   kind, its signature verifies over the subject's stored bytes, and its key is the
   authority key or a registered, authorised, unrevoked verifier key allowed to sign
   that subject. An invalid attestation therefore never enters the ledger.
2. **Authority-governed records.** Every new object a ``Governance`` names (the core
   names verifier identities and revocations; plug-ins name their own kinds) needs an
   attestation by the ledger's authority key in the same batch. A batch recorded as
   ``history`` (upstream records imported without signing) is exempt: those objects
   are kept, but carry no standing; whoever reads them must check for the attestation.
3. **Legal successors.** Every ``StateRule`` checks each new object against the stored
   state before it (e.g. a lifecycle that only moves forward), and each governed record
   that a new authority attestation gives standing (its first) against the state before
   that attestation: a record counts from where it is established, so that is where it
   must be legal (``ledger.trust.standing``).

The policy is one immutable value (``AdmissionPolicy``: governance, state rules and the
attestation policy), passed to whatever judges: a store is opened with it
(``ledger.store.backends.open_store(db, policy=...)``), the judgement functions and the
audit take it as an argument. Nothing is installed and no module holds policy state.
The generic core knows no IDKMesh kind: when a caller names no policy, the package's
default applies (``default_policy``: the core extended by the plug-ins this
distribution registers under the ``provledger.policy`` entry-point group, i.e.
IDKMesh's rules). ``CORE_ONLY`` is the generic core alone, for a caller who says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

from ledger.errors import NotFound, RuleViolation
from ledger.store.base import LedgerReader, SignatureVerdicts, StoredObject

# Imported here, not in the function: it runs once per new object of every batch, and an
# import statement there costs microseconds each time (prefix.py needs only what this
# module loads already).
from ledger.store.prefix import Prefix
from ledger.trust.policy import GENERIC_POLICY, AttestationPolicy
from ledger.trust.refusal import Governed, Refusal, attestation_refusal, governance_refusal

if TYPE_CHECKING:
    from ledger.store.prepared import Prepared


class AdmissionRefused(RuleViolation):
    """The batch breaks an admission rule (exit 4); nothing of it was written."""

    def __init__(self, refusals: Sequence[Refusal]) -> None:
        self.refusals = tuple(refusals)
        more = f" (and {len(refusals) - 1} more)" if len(refusals) > 1 else ""
        super().__init__(refusals[0].text() + more)


class Governance(Protocol):
    """Says whether an object is authority-governed (None: it is not).

    It may also have ``kinds`` (a frozenset of kinds, ``kinds_of``): the only kinds it
    can say governed. The policy then asks it about those kinds alone, when an object is
    written and when ``verify`` replays it (``AdmissionPolicy.parts_for``): one dispatch,
    so a part that names its kinds wrongly is wrong in both, never in one only.
    """

    def governed(self, obj: StoredObject, reader: LedgerReader) -> Governed | None: ...


class StandingView(Protocol):
    """Which earlier records count (``ledger.trust.standing.Standing``), for state rules."""

    def has_standing(self, obj: StoredObject, as_of: int | None = None) -> bool: ...

    def since(self, obj: StoredObject) -> int | None:
        """The position where ``obj`` was established (None: it never counts): records
        of one kind and id take effect in this order, not in their seq order."""
        ...


class StateRule(Protocol):
    """Checks a new object against the state before it (None: admissible). Like a
    ``Governance``, it may name the only kinds it refuses (``kinds``, ``kinds_of``).

    ``reader`` holds only the entries before the position judged
    (``ledger.store.prefix.Prefix``; ``reader.size()`` is that position): ``obj``'s own,
    and for a governed record also that of the authority attestation that establishes
    it, which may come much later (``ledger.trust.standing``). ``standing`` says which
    entries count, as of any position. A rule judges the same way at write time, when
    ``verify`` replays it and when a read computes standing."""

    def check(
        self, obj: StoredObject, reader: LedgerReader, standing: StandingView
    ) -> Refusal | None: ...


def kinds_of(part: Governance | StateRule) -> frozenset[str] | None:
    """The kinds a governance or state rule judges (``kinds``: any other kind gets None
    from it, whatever the object), or None: any kind."""
    kinds = getattr(part, "kinds", None)
    return kinds if isinstance(kinds, frozenset) else None


@dataclass(frozen=True)
class PolicyParts:
    """What a plug-in adds to the core policy (at most one plug-in brings an
    attestation policy)."""

    governance: tuple[Governance, ...] = ()
    state_rules: tuple[StateRule, ...] = ()
    attestation: AttestationPolicy | None = None


# ledger.trust.identity's IDENTITY_KIND and REVOCATION_KIND (not imported here: this
# module is loaded by every CLI start, identity.py pulls in the crypto stack).
_IDENTITY_KIND = "verifier-identity"
_REVOCATION_KIND = "revocation"


@dataclass(frozen=True)
class CoreGovernance:
    """The core's own governed kinds: verifier identities and key revocations."""

    kinds = frozenset((_IDENTITY_KIND, _REVOCATION_KIND))

    def governed(self, obj: StoredObject, reader: LedgerReader) -> Governed | None:
        if obj.kind not in self.kinds:
            return None  # the common case, decided without parsing
        value = obj.json()
        if obj.kind == _IDENTITY_KIND:
            who = value.get("verifier_id") if isinstance(value, dict) else None
            return Governed(
                f"verifier identity {who!r}",
                "provledger identity register --verifier-id ID --adapter NAME"
                " --adapter-version V --public-key KEY.pub",
                "identity-not-authorized",
                history=False,
            )
        if obj.kind == _REVOCATION_KIND:
            key = value.get("key_id") if isinstance(value, dict) else None
            return Governed(
                f"revocation of key {key}",
                "provledger identity revoke KEY_ID --reason REASON",
                "revocation-not-authorized",
                history=False,
            )
        return None


_KINDS_KEPT = 1024  # kinds whose parts ``AdmissionPolicy.parts_for`` keeps


@dataclass(frozen=True)
class AdmissionPolicy:
    """The composed rule set, one immutable value; ``admit`` raises ``AdmissionRefused``
    or returns. ``attestation`` is the protocol knowledge the attestation judgement
    uses (``ledger.trust.policy``)."""

    governance: tuple[Governance, ...] = (CoreGovernance(),)
    state_rules: tuple[StateRule, ...] = ()
    attestation: AttestationPolicy = GENERIC_POLICY
    # ``parts_for``'s answers by kind: derived from the fields above, never compared.
    _by_kind: dict[object, tuple[tuple[Governance, ...], tuple[StateRule, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def parts_for(self, kind: object) -> tuple[tuple[Governance, ...], tuple[StateRule, ...]]:
        """The governances and state rules that judge an object of ``kind``, in policy
        order: those naming no kinds and those naming ``kind`` (``kinds_of``). The
        others give None for it by their contract. Admission and ``verify``'s replay
        both ask only these."""
        found = self._by_kind.get(kind)
        if found is None:

            def judges(part: Governance | StateRule) -> bool:
                kinds = kinds_of(part)
                return kinds is None or kind in kinds

            found = (
                tuple(filter(judges, self.governance)),
                tuple(filter(judges, self.state_rules)),
            )
            # Bounded: a ledger a hostile writer filled with made-up kinds must not
            # grow it without end (past the bound each answer is derived again).
            if len(self._by_kind) < _KINDS_KEPT:
                self._by_kind[kind] = found
        return found

    def extended(self, parts: Iterable[PolicyParts]) -> AdmissionPolicy:
        """This policy plus ``parts``: rules appended in order; one attestation policy."""
        governance, rules = list(self.governance), list(self.state_rules)
        attestation: AttestationPolicy | None = None
        for part in parts:
            governance += part.governance
            rules += part.state_rules
            if part.attestation is not None:
                if attestation is not None:
                    raise PolicyUnavailable(
                        "attestation policy, got two plug-ins that bring one, expected one"
                    )
                attestation = part.attestation
        return AdmissionPolicy(tuple(governance), tuple(rules), attestation or self.attestation)

    def governed(self, obj: StoredObject, reader: LedgerReader) -> Governed | None:
        """Why ``obj`` needs the authority's attestation (the first governance that says
        so), or None."""
        for gov in self.parts_for(obj.kind)[0]:
            need = gov.governed(obj, reader)
            if need is not None:
                return need
        return None

    def precheck(
        self, reader: LedgerReader, items: Sequence[Prepared], *, history: bool = False
    ) -> None:
        """Raise ``AdmissionRefused`` now if ``items``, appended to ``reader``'s ledger as
        one batch of new entries, would be refused: the same rules, for commands that
        report before they write (the append's own admission, inside its transaction,
        still decides). Items already stored are judged as new too, so a command re-run
        on a ledger that moved on (a freeze after the burn) is refused, not a no-op."""
        from ledger.store.batch import BatchReader, pending_objects

        new = pending_objects(reader, items)
        refusals = self.refusals(BatchReader(reader, new), new, history=history)
        if refusals:
            raise AdmissionRefused(refusals)

    def admit(
        self,
        reader: LedgerReader,
        new: Sequence[StoredObject],
        *,
        history: bool,
        signatures: SignatureVerdicts | None = None,
    ) -> None:
        """Check the newly written objects of one batch (in log order) against the rules.

        ``signatures``: Ed25519 verdicts computed ahead; anything they do not hold for
        exactly the key, message and signature asked is verified here.
        """
        refusals = self.refusals(reader, new, history=history, signatures=signatures)
        if refusals:
            raise AdmissionRefused(refusals)

    def refusals(
        self,
        reader: LedgerReader,
        new: Sequence[StoredObject],
        *,
        history: bool,
        signatures: SignatureVerdicts | None = None,
    ) -> list[Refusal]:
        """Every refusal of one batch: ``new`` are its objects in log order, readable
        through ``reader`` at their positions. Each object is judged as of its own
        position: it reads only the entries before it (``ledger.store.prefix.Prefix``),
        except that a governed object looks for the authority's attestation among the
        batch's own attestations. Listed in log order."""
        from ledger.trust.attestation import ATTESTATION_KIND
        from ledger.trust.identity import authority_key, trust_index
        from ledger.trust.judgement import check_attestation
        from ledger.trust.keys import key_id
        from ledger.trust.standing import Standing

        # Attestations first: whether a governed object is signed by the authority in
        # this batch is their verdict.
        refused: dict[str, Refusal] = {}
        authority_signed: dict[str, int] = {}  # subject -> seq of its first such attestation
        signers: dict[str, list[str]] = {}  # subject -> key ids that attest it in the batch
        attestations = [o for o in new if o.kind == ATTESTATION_KIND]
        if attestations:
            index = trust_index(reader)
            for att in attestations:
                verdict = check_attestation(reader, att, self, index, signatures)
                signers.setdefault(verdict.subject_digest, []).append(verdict.key_id)
                if not verdict.ok:
                    refused[att.digest] = attestation_refusal(att, verdict)
                elif verdict.signer == "authority":
                    # The subject the judgement read from the attestation's bytes.
                    authority_signed.setdefault(verdict.subject_digest, att.seq)
        authority = authority_key(reader)
        authority_id = None if authority is None else key_id(authority)
        standing: Standing | None = None
        refusals: list[Refusal] = []
        for obj in new:
            if obj.kind == ATTESTATION_KIND:
                if obj.digest in refused:
                    refusals.append(refused[obj.digest])
                continue
            need = None if obj.digest in authority_signed else self.governed(obj, reader)
            if need is not None and (not history or not need.history):
                refusals.append(
                    governance_refusal(
                        obj, need, authority_id, signers.get(obj.digest, ()), history
                    )
                )
            if self.state_rules:
                standing = standing or Standing(reader, self)
                positions = [obj.seq]
                if obj.digest in authority_signed and self.governed(obj, reader) is not None:
                    positions.append(authority_signed[obj.digest])
                rules = self.parts_for(obj.kind)[1]
                refusals += _rule_refusals(rules, obj, reader, positions, standing)
        if self.state_rules and authority_signed:
            # Records stored before this batch that an attestation here establishes.
            standing = standing or Standing(reader, self)
            batch = {o.digest for o in new}
            for subject_digest, seq in authority_signed.items():
                subject = reader.get(subject_digest)
                if (
                    subject is None
                    or subject_digest in batch
                    or self.governed(subject, reader) is None
                    or standing.attested_at(subject) != seq
                ):
                    continue
                rules = self.parts_for(subject.kind)[1]
                refusals += _rule_refusals(rules, subject, reader, [seq], standing)
        return refusals


def _rule_refusals(
    rules: Sequence[StateRule],
    obj: StoredObject,
    reader: LedgerReader,
    positions: Sequence[int],
    standing: StandingView,
) -> list[Refusal]:
    """The state rules' refusals of ``obj`` judged before the first of ``positions``
    where any refuses (empty: admissible at all of them)."""
    for end in positions:
        before = Prefix(reader, end)
        found = [r for rule in rules if (r := rule.check(obj, before, standing)) is not None]
        if found:
            return found
    return []


# --- the policy values ----------------------------------------------------------------


class PolicyUnavailable(NotFound):
    """The package's default policy cannot be built from its installed metadata."""


#: The generic core alone: identities and revocations governed, no protocol knowledge.
CORE_ONLY: Final = AdmissionPolicy()

#: The entry-point group under which a distribution's plug-ins return ``PolicyParts``.
POLICY_GROUP: Final = "provledger.policy"
_DISTRIBUTION: Final = "provledger"


def core_policy() -> AdmissionPolicy:
    """The generic core alone (``CORE_ONLY``): what a caller gets only by asking for it."""
    return CORE_ONLY


def default_policy() -> AdmissionPolicy:
    """The package's default policy: the core extended by every plug-in the provledger
    distribution itself registers under ``provledger.policy`` (IDKMesh's rules), in
    name order.

    Only this distribution's own entry points count, so another installed package
    cannot change what a ledger admits by registering one. Each call builds a new,
    equal value (a store builds it once, when it first judges); ``PolicyUnavailable``
    (exit 3) when the metadata is missing or names no plug-in (a stale install).
    """
    # Imported here: importlib.metadata costs ~20 ms, and only judging needs it.
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        found = distribution(_DISTRIBUTION).entry_points.select(group=POLICY_GROUP)
    except PackageNotFoundError:
        found = None
    if not found:
        raise PolicyUnavailable(
            f"admission policy, got no {POLICY_GROUP} entry points of the installed"
            f" {_DISTRIBUTION} distribution, expected its IDKMesh plug-ins (install the"
            " package: pip install .)"
        )
    return CORE_ONLY.extended(ep.load()() for ep in sorted(found, key=lambda ep: ep.name))
