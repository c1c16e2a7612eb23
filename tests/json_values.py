"""Hypothesis strategies for JSON objects whose numbers include integral doubles (``1.0``,
``-0.0``): the values RFC 8785 spells as integers, for which the ledger keeps float hints."""

from __future__ import annotations

from hypothesis import strategies as st

INTEGRAL_FLOATS = st.integers(-(2**40), 2**40).map(float) | st.just(-0.0)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | INTEGRAL_FLOATS
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
    | st.text(max_size=8)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
OBJECTS = st.dictionaries(st.text(max_size=6), VALUES, min_size=1, max_size=5)
