"""``ledger.recent.FirstSeen``: what it holds after any sequence of adds.

The model is the dict it replaced (insert when absent, then drop the oldest key beyond
the limit), which holds the same keys with the same values, only more slowly.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.recent import FirstSeen


@given(
    limit=st.integers(1, 6),
    adds=st.lists(st.tuples(st.integers(0, 9), st.integers()), max_size=60),
)
def test_holds_what_the_dict_it_replaced_held(limit: int, adds: list[tuple[int, int]]) -> None:
    recent: FirstSeen[int, int] = FirstSeen(limit)
    model: dict[int, int] = {}
    for key, value in adds:
        recent.add(key, value)
        if key not in model:
            model[key] = value
            if len(model) > limit:
                del model[next(iter(model))]
    assert len(recent) == len(model) <= limit
    for key in range(10):
        assert recent.get(key) == model.get(key)


def test_the_first_value_stays_and_a_repeat_does_not_make_a_key_newer() -> None:
    recent: FirstSeen[str, int] = FirstSeen(2)
    recent.add("a", 1)
    recent.add("b", 2)
    recent.add("a", 3)  # held: unchanged, still the oldest
    recent.add("c", 4)
    assert (recent.get("a"), recent.get("b"), recent.get("c")) == (None, 2, 4)


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="limit, got 0, expected at least 1"):
        FirstSeen(0)
