"""Hypothesis strategies for JSON documents, shared by the tests of what reads or writes them."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def finite_json(
    *,
    texts: st.SearchStrategy[str],
    keys: st.SearchStrategy[str],
    list_size: int = 3,
    dict_size: int = 3,
    max_leaves: int = 10,
) -> st.SearchStrategy[Any]:
    """Any JSON value a strict encoder writes: no NaN or infinity, strings drawn from ``texts``."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | texts
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=list_size)
            | st.dictionaries(keys, children, max_size=dict_size)
        ),
        max_leaves=max_leaves,
    )
