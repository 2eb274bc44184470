"""What the rules read: a tool result's URLs and text (found however the result is
written), and a profile's identifier shapes (remembered per name, forgotten past a bound,
and the same after the trip to a worker)."""

from __future__ import annotations

import pytest

from trajectory_review.rules.lint import lint
from trajectory_review.rules.registry import load_rules, source_from_result

CFG = load_rules()


def result(reply: str, sources=(), cfg=CFG, rule: str = ""):
    return {r.rule: r for r in lint(reply, list(sources), cfg).results}[rule]


@pytest.mark.parametrize(
    "value",
    [
        {"hits": [{"url": "https://a.example/x", "t": "see https://b.example/y."}]},
        # escapes in the JSON text: a URL must not run on through `\n` or `\"`
        {
            "t": "first https://a.example/x\nthen https://b.example/y",
            "q": 'say "https://c.example"',
        },
        {"https://key.example/k": ["HTTPS://Upper.example/p,", 5, None, True]},
        {"big": 2**70, "u": "http://beyond-64-bits.example"},  # not orjson's: string by string
        ["no link here", {"n": 1.5}],
    ],
)
def test_sources_find_every_url_of_each_string_in_order_however_the_result_is_written(value):
    from trajectory_review.rules.registry import _URL, _strings

    one_by_one = [u.rstrip(".,;") for s in _strings(value) for u in _URL.findall(s)]
    assert source_from_result(value).urls == tuple(dict.fromkeys(one_by_one))


def test_a_sources_text_is_the_result_or_its_compact_json():
    import json

    value = {"name": "plot_id", "note": "Straße, \n ok", "n": [1, 2.5]}
    assert source_from_result(value).text == json.dumps(
        value, ensure_ascii=False, separators=(",", ":")
    )
    assert source_from_result("plain text").text == "plain text"


def test_identifier_shapes_judge_a_name_the_same_the_second_time_and_after_pickling():
    import pickle

    reply = "Join `plot_id` to `trees` on `stand_age`; see `@scope` and `Thing`."
    sources = [source_from_result({"plot_id": 1})]
    first = result(reply, sources, rule="grounded-identifiers")
    again = result(reply, sources, rule="grounded-identifiers")  # names remembered now
    cfg = pickle.loads(pickle.dumps(CFG))  # as a worker process gets it: nothing remembered
    shipped = result(reply, sources, cfg, rule="grounded-identifiers")
    assert first == again == shipped
    assert first.evidence == ("trees", "stand_age")


def test_identifier_shapes_forget_names_past_their_bound_and_still_judge_them():
    from trajectory_review.rules import patterns

    shapes = CFG.of("grounded-identifiers").shapes
    for i in range(patterns.MAX_KNOWN + 10):
        shapes.matches(f"name_{i}")
    assert len(shapes._known) <= patterns.MAX_KNOWN
    assert shapes.matches("plot_id") and not shapes.matches("NotAName")
    assert not shapes.matches("x" * (patterns.MAX_KNOWN_TEXT + 1))  # too long to remember
    assert ("x" * (patterns.MAX_KNOWN_TEXT + 1)) not in shapes._known
