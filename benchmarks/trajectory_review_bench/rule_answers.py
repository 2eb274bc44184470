"""Answers written to trip the reply rules (and some that look like they would but must
not): the generator's data for the QA queue, one reply per rule case."""

from __future__ import annotations

import json

from trajectory_review_bench.answers import DOCS, Answer, Ctx
from trajectory_review_bench.otlp import msg, tool_call, tool_result

RULE_REPLIES = [
    # praise opener + long uncited reply
    (
        "Great question! Canopy cover in {region} is computed from plot photo interpretation "
        "and then weighted by plot acreage before it is summarised. " + "The estimate for each "
        "stand is combined with its acreage so that large stands count for more. " * 3,
        "run_sql",
    ),
    # invented identifiers (two: collapses)
    (
        "Use `canopy_weighted_v2()` together with `plots.crown_ratio` to get the acre-weighted "
        "value for {region}.",
        "run_sql",
    ),
    # one invented identifier (metric-only failure)
    (
        "The acre-weighted value for {region} comes from the `avg` column of the result, "
        "scaled by `stand_weight` in the warehouse.",
        "run_sql",
    ),
    # hedged name
    (
        "Call the `canopy_cover` measure or the equivalent SQL view for {region}; it returns "
        "the acre-weighted share.",
        "call_measure",
    ),
    # self-commentary
    (
        "I don't have access to the raw photo plots, but the governed measure for {region} "
        "reports canopy as an acre-weighted share.",
        "call_measure",
    ),
    # must NOT fire: reporter-voice sentences
    (
        "I haven't run the repro yet — can you share the code you used? The governed measure "
        "for {region} is acre-weighted.",
        "call_measure",
    ),
    (
        "To be clear about the behaviour: the `canopy_cover` measure for {region} is "
        "acre-weighted, and plot means are diagnostics only.",
        "call_measure",
    ),
    # cited long answer: must pass the citation rule
    (
        "Canopy cover for {region} follows the reporting guide at "
        + DOCS
        + "/reporting/canopy/ which explains that estimates are acre-weighted. "
        + "Each plot contributes in proportion to its acreage, and stands are summarised "
        "from their plots before regions are. " * 3,
        "run_sql_docs",
    ),
    # laundering: URL shaped like ours, under a retrieved section URL
    (
        "The weighting is documented at " + DOCS + "/reporting/canopy/invented-weights "
        "for {region}. " + "Plots are weighted by acreage and summarised per stand before "
        "regions are combined into the estimate. " * 4,
        "run_sql_docs",
    ),
    # a retired table named as if current
    (
        "For visits before 2020 query `trees_legacy`, which has the same columns as the "
        "current table for {region}.",
        "run_sql",
    ),
    # a retired table named as a migration: must not fire
    (
        "`trees_legacy` was merged into `trees` in 2021; use `trees` instead of the old "
        "table for {region}.",
        "run_sql",
    ),
    # a long answer built on no retrieval at all: must fail the citation rule
    (
        "Canopy in {region} is usually reported per stand and then per region, and the "
        "weighting follows acreage so that bigger stands count for more. "
        + "Reviewers should compare it with the previous inventory cycle before drawing "
        "conclusions about change over time. " * 3,
        "none",
    ),
]


def rule_answer(ctx: Ctx, region: str) -> Answer:
    r = ctx.rnd
    template, tool = r.choice(RULE_REPLIES)
    c = "call_" + ctx.hex(8)
    if tool == "call_measure":
        call = msg(
            "assistant", tool_call(c, "call_measure", {"measure": "canopy_cover", "region": region})
        )
        res = msg("tool", tool_result(c, json.dumps({"measure": "canopy_cover", "value": 0.62})))
        governed, fallback = True, False
    elif tool == "run_sql_docs":
        call = msg("assistant", tool_call(c, "search_docs", {"query": "canopy weighting"}))
        res = msg(
            "tool",
            tool_result(
                c,
                [
                    {
                        "title": "Canopy reporting",
                        "url": DOCS + "/reporting/canopy",
                        "text": "Canopy cover is acre-weighted.",
                    }
                ],
            ),
        )
        governed, fallback = False, True
    elif tool == "none":
        return Answer(
            f"How is canopy cover computed for {region}?",
            [],
            template.format(region=region).strip(),
            False,
            False,
        )
    else:
        call = msg("assistant", tool_call(c, "run_sql", {"sql": "SELECT avg(canopy) FROM plots"}))
        res = msg("tool", tool_result(c, [{"avg": 0.61}]))
        governed, fallback = False, True
    return Answer(
        f"How is canopy cover computed for {region}?",
        [(call, res)],
        template.format(region=region).strip(),
        governed,
        fallback,
    )
