"""Imported history in the log: objects whose order the ledger did not witness.

An import records what happened elsewhere (an upstream repository's cohorts, plans and
results), in whatever order the importer walks it. The log then proves when the ledger
*learnt* each record, but not the order in which the records came to be. A
``history-import`` record says so: an importer puts it first in the batch that brings
the objects in, listing every imported object the batch adds (``history_markers``); the
ledger's own records in that batch (the authority's attestations) are not history.

Invariants:
- A marker lists only objects not yet stored when the batch was planned, so a later
  import never re-labels a record the ledger already witnessed; with nothing new there
  is no marker (an idempotent re-import appends nothing).
- ``ImportedHistory.marked(digest, seq)`` reads only markers *before* ``seq``: a
  judgement about entry N reads the log prefix. A marker can therefore only withdraw a
  claim about order (the object's order is "not attested"), never create one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ledger.store.base import LedgerReader

if TYPE_CHECKING:
    from ledger.store.prepared import Prepared

HISTORY_KIND: Final = "history-import"
RECORD_VERSION: Final = "0.1"
#: Digests per marker: a large import gets several markers, each far below the
#: document size limit (71 bytes per digest).
MAX_DIGESTS: Final = 100_000


def history_markers(
    reader: LedgerReader, items: Sequence[Prepared], source: str, root: str
) -> list[Prepared]:
    """The marker(s) naming those of ``items`` not yet stored (none if all are), to
    put first in the batch that appends them."""
    from ledger.store.prepared import prepare_value

    new = sorted({p.digest for p in items if reader.get(p.digest) is None})
    return [
        prepare_value(
            {
                "provledger_kind": HISTORY_KIND,
                "schema_version": RECORD_VERSION,
                "source": source,
                "root": root,
                "digests": new[start : start + MAX_DIGESTS],
            },
            HISTORY_KIND,
        )
        for start in range(0, len(new), MAX_DIGESTS)
    ]


@dataclass(frozen=True)
class HistoryMark:
    """The marker that names an object as imported history."""

    marker_digest: str
    marker_seq: int
    source: str
    root: str

    def to_json(self) -> dict[str, object]:
        return {
            "marker_digest": self.marker_digest,
            "marker_seq": self.marker_seq,
            "source": self.source,
            # The folder imported, under the name ``import idkmesh`` will use: ``root``
            # is a tree head in every other output.
            "source_root": self.root,
        }


class ImportedHistory:
    """Which stored objects some earlier ``history-import`` record names (read once)."""

    def __init__(self, reader: LedgerReader) -> None:
        self._marks: dict[str, HistoryMark] = {}
        for obj in reader.by_kind(HISTORY_KIND):
            self._add(obj.digest, obj.seq, obj.data)

    def _add(self, digest: str, seq: int, data: bytes) -> None:
        import json

        try:
            value = json.loads(data)
        except ValueError:
            return  # the audit reports damaged bytes; a damaged marker marks nothing
        if not isinstance(value, dict):
            return
        source, root = value.get("source"), value.get("root")
        mark = HistoryMark(digest, seq, str(source), str(root))
        for named in _strings(value.get("digests")):
            # The earliest marker wins: it is the one a prefix reader sees first.
            known = self._marks.get(named)
            if known is None or known.marker_seq > seq:
                self._marks[named] = mark

    def marked(self, digest: str, seq: int) -> HistoryMark | None:
        """The marker before ``seq`` that names ``digest`` as imported history, if any."""
        mark = self._marks.get(digest)
        return mark if mark is not None and mark.marker_seq < seq else None


def _strings(value: object) -> Iterable[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
