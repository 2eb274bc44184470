"""The JSON text of a tool result the reply rules read (`Source.text`): written faster by
orjson where that is the standard library's text, and never different from it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_review.rules.registry import Source

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # NaN, infinities, subnormals and small numbers among them
    | st.text(st.characters(categories=["L", "N", "P", "S", "Z", "C"]), max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


def _as_the_library_writes(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=500, deadline=None)
@given(_JSON)
def test_a_tool_result_is_read_as_the_json_text_the_standard_library_writes(value):
    # what identifiers are looked for in (grounded-identifiers): written faster, never
    # differently, whatever the result holds
    expected = value if isinstance(value, str) else _as_the_library_writes(value)
    assert Source(value, ()).text == expected


@pytest.mark.parametrize(
    "value",
    [
        [1e-05, 1.5e-07, 0.0001, 5e-324, -2.5e-300, 1e16, 1e22],  # floats orjson writes otherwise
        {"x": float("nan"), "y": [float("inf"), float("-inf")]},  # read in by json.loads only
        {"n": 2**64, "m": -(2**63) - 1},  # integers past 64 bits
        ["lone \ud800 surrogate", {"\udfff": "key"}],
        ['\x00\x1f\x7f\u2028 " \\ / é 😀', None, True],
        "a string result is its own text",
    ],
)
def test_tool_results_orjson_writes_otherwise_are_read_as_the_library_writes(value):
    assert Source(value, ()).text == (
        value if isinstance(value, str) else _as_the_library_writes(value)
    )


def test_a_result_nested_past_orjsons_limit_is_read_as_the_library_writes():
    value: list = []
    for _ in range(400):
        value = [value]
    assert Source(value, ()).text == "[" * 401 + "]" * 401
