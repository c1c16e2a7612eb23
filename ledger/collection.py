"""Fewer passes of Python's cyclic garbage collector during a long bulk pass.

``import jsonl`` and ``verify`` hold thousands of objects in flight (batches, chunks of
rows and their results) while allocating and freeing millions; with the default
thresholds (a pass every 700 allocations net of those freed) the collector re-examines
what is in flight, and everything loaded before the pass, many times over.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["fewer_collections"]


@contextlib.contextmanager
def fewer_collections(threshold: int) -> Iterator[None]:
    """Within the block, the objects from before it are frozen (never examined; forked
    workers then share their pages untouched) and the youngest generation is collected
    every ``threshold`` allocations (net of those freed), never more often than before.
    Reference counting frees everything as before; only cycles wait longer. The settings
    are restored afterwards (a freeze made by a caller is left as it was)."""
    before = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0  # never unfreeze what a caller froze
    if freeze:
        gc.freeze()
    gc.set_threshold(max(before[0], threshold), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if freeze:
            gc.unfreeze()
