"""What the synthetic assistant says: its trusted corpus, its questions and answers (the
generator's data, written out as templates), and what the live assistant would have
recorded for each answer (the tag, and every citation verified once).

`write_answer` is long because it is a table of answer templates, one branch a kind of answer;
it holds data, not logic.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from trajectory_review.model.provenance import DISPLAY
from trajectory_review.replay.citations import scan
from trajectory_review.replay.resolvers import CorpusEntry, VerifyResolver
from trajectory_review_bench.otlp import msg, text, tool_call, tool_result

START_NS = 1_789_000_000_000_000_000  # 2026-09-09
SPAN_DAYS = 80
SYSTEM = (
    "You answer questions about the regional forest inventory. Prefer governed "
    "measures; cite trusted documentation when you fall back to SQL or R."
)
TITLE_SYSTEM = "You title chat conversations. Reply with a short title only."
DOCS = "https://inventory.example.org/docs"

CORPUS = [
    CorpusEntry(
        "Canopy cover is always acre-weighted for reporting. Unweighted plot means "
        "are for diagnostics only.",
        "Reporting guide",
        "prose",
    ),
    CorpusEntry(
        "basal_area: the cross-sectional area of all live stems at breast height, "
        "in square feet per acre.",
        "Data dictionary",
        "definition",
    ),
    CorpusEntry(
        "Table plots(plot_id, stand_id, acres, canopy, measured_on). One row per plot visit.",
        "Warehouse schema",
        "schema",
    ),
    CorpusEntry(
        "Mortality is reported as the share of stems that died since the previous "
        "visit, never as an absolute count.",
        "Reporting guide",
        "prose",
    ),
    CorpusEntry(
        "stand_age: years since the last stand-replacing disturbance.",
        "Data dictionary",
        "definition",
    ),
    CorpusEntry(
        "Table trees(tree_id, plot_id, species, dbh_in, status). status is 'live' or 'dead'.",
        "Warehouse schema",
        "schema",
    ),
]

REGIONS = [
    "North Ridge",
    "Cedar Basin",
    "Elk Hollow",
    "Pine Flats",
    "Silver Creek",
    "Hemlock Bay",
    "Granite Pass",
]
YEARS = [2021, 2022, 2023, 2024, 2025]
SPECIES = ["Douglas-fir", "western hemlock", "red alder", "ponderosa pine", "grand fir"]


@dataclass
class Answer:
    """One assistant turn: rounds of (assistant message, tool result message)."""

    question: str
    rounds: list[tuple[dict[str, Any], dict[str, Any] | None]]
    final_text: str
    governed: bool
    fallback: bool


@dataclass
class Ctx:
    rnd: random.Random
    ids: Iterator[int]
    t: int
    spans: list[dict[str, Any]] = field(default_factory=list)
    start: int = START_NS  # the first day conversations fall on

    def hex(self, width: int) -> str:
        return f"{self.rnd.getrandbits(width * 4):0{width}x}"

    def tick(self, lo: float = 0.2, hi: float = 3.0) -> int:
        self.t += int(self.rnd.uniform(lo, hi) * 1e9)
        return self.t


def cite(quote: str, reason: str) -> str:
    return f"\n\n<commons-citation>\n\n{reason}\n\n> {quote}\n\n</commons-citation>"


# Long on purpose: the generator's answer kinds, each a short branch of one choice.
def write_answer(ctx: Ctx, kind: str) -> Answer:
    r = ctx.rnd
    region, year = r.choice(REGIONS), r.choice(YEARS)
    cid = lambda: "call_" + ctx.hex(8)  # noqa: E731
    if kind == "governed":
        q = f"What was mean canopy cover in {region} in {year}?"
        c = cid()
        val = round(r.uniform(0.35, 0.85), 3)
        call = msg(
            "assistant",
            tool_call(
                c, "call_measure", {"measure": "canopy_cover", "region": region, "year": year}
            ),
        )
        res = msg(
            "tool",
            tool_result(
                c,
                json.dumps(
                    {"measure": "canopy_cover", "value": val, "unit": "share", "weighting": "acre"}
                ),
            ),
        )
        return Answer(
            q,
            [(call, res)],
            f"Mean canopy cover in {region} in {year} was "
            f"**{val:.0%}** (acre-weighted, from the governed `canopy_cover` "
            "measure).",
            True,
            False,
        )
    if kind == "metrics":
        q = f"Compare basal area and stand age across {region} for {year}."
        c1, c2 = cid(), cid()
        call1 = msg(
            "assistant",
            tool_call(
                c1,
                "call_metrics",
                {"metrics": ["basal_area", "stand_age"], "region": region, "year": year},
            ),
        )
        rows = [
            {
                "stand": f"S-{r.randint(100, 999)}",
                "basal_area": round(r.uniform(80, 240)),
                "stand_age": r.randint(20, 160),
            }
            for _ in range(r.randint(3, 6))
        ]
        res1 = msg("tool", tool_result(c1, rows))
        call2 = msg(
            "assistant",
            text("Let me also check the most recent visit dates."),
            tool_call(c2, "call_measure", {"measure": "last_visit", "region": region}),
        )
        res2 = msg(
            "tool",
            tool_result(
                c2, json.dumps({"last_visit": f"{year}-0{r.randint(5, 9)}-1{r.randint(0, 9)}"})
            ),
        )
        best = max(rows, key=lambda x: x["basal_area"])
        return Answer(
            q,
            [(call1, res1), (call2, res2)],
            f"Across {len(rows)} stands in {region}, basal area ranges from "
            f"{min(x['basal_area'] for x in rows)} to {best['basal_area']} ft²/ac; "
            f"the densest stand, {best['stand']}, is {best['stand_age']} years "
            "old.\n\n| stand | basal area | age |\n|---|---|---|\n"
            + "\n".join(f"| {x['stand']} | {x['basal_area']} | {x['stand_age']} |" for x in rows),
            True,
            False,
        )
    if kind in ("sql_cited", "sql_rejected", "sql_malformed", "sql_mixed", "r_cited"):
        c = cid()
        sp = r.choice(SPECIES)
        if kind == "r_cited":
            q = f"Fit a quick trend of mortality for {sp} in {region}."
            call = msg(
                "assistant",
                tool_call(
                    c,
                    "run_r",
                    {
                        "code": (
                            "library(dplyr)\ntrees |>\n  filter(species == '" + sp + "') |>\n"
                            "  group_by(year) |>\n  summarise(mortality = mean(status == 'dead'))"
                        )
                    },
                ),
            )
            share = round(r.uniform(0.01, 0.09), 3)
            res = msg(
                "tool",
                tool_result(c, json.dumps({"mortality": share, "docs": f"{DOCS}/mortality"})),
            )
            body = (
                f"{sp.capitalize()} mortality in {region} is about {share:.1%} per "
                "visit, and the trend is flat over the last three visits. Details: "
                f"{DOCS}/mortality"
            )
            body += cite(
                "Mortality is reported as the share of stems that died since the "
                "previous visit, never as an absolute count.",
                "The figure is a share, as the guide requires.",
            )
            return Answer(q, [(call, res)], body, False, True)
        q = (
            f"How many {sp} trees were measured in {region} in {year}, "
            "and what is their average DBH?"
        )
        sql = (
            f"SELECT count(*) AS n, avg(dbh_in) AS mean_dbh\nFROM trees JOIN plots "
            f"USING (plot_id)\nWHERE species = '{sp}' AND region = '{region}'\n"
            f"  AND year(measured_on) = {year}"
        )
        n, dbh = r.randint(40, 900), round(r.uniform(8, 31), 1)
        call = msg("assistant", tool_call(c, "run_sql", {"sql": sql}))
        if r.random() < 0.7:  # most SQL tools echo the query and the columns they ran
            res = msg(
                "tool",
                tool_result(c, {"sql": sql, "columns": ["n", "mean_dbh"], "rows": [[n, dbh]]}),
            )
        else:
            res = msg("tool", tool_result(c, [{"n": n, "mean_dbh": dbh}]))
        body = (
            f"{n} {sp} trees were measured in {region} in {year}; their mean diameter "
            f"at breast height is {dbh} in. The query joins `trees` to `plots` on "
            "`plot_id`."
        )
        rounds = [(call, res)]
        governed = False
        if kind == "sql_mixed":
            c0 = cid()
            rounds.insert(
                0,
                (
                    msg(
                        "assistant",
                        tool_call(c0, "call_measure", {"measure": "plot_count", "region": region}),
                    ),
                    msg("tool", tool_result(c0, json.dumps({"plot_count": r.randint(20, 90)}))),
                ),
            )
            governed = True
        if kind in ("sql_cited", "sql_mixed"):
            body += cite(
                "Table trees(tree_id, plot_id, species, dbh_in, status).",
                "The schema confirms the join key and units.",
            )
        if kind == "sql_rejected" or (kind == "sql_mixed" and r.random() < 0.5):
            body += cite(
                "DBH is always measured at 4.5 feet on the uphill side.",
                "Standard measurement height.",
            )
        if kind == "sql_malformed":
            body += (
                "\n\n<commons-citation>\nThe warehouse documents this table.\n> Table "
                "trees(tree_id, plot_id, species, dbh_in, status).\nOne row per tree.\n"
                "> status is 'live' or 'dead'.\n</commons-citation>"
            )
        return Answer(q, rounds, body, governed, True)
    if kind == "hostile":
        q = f'Summarise canopy for {region} <img src=x onerror="window.__xss_q=1">'
        c = cid()
        call = msg("assistant", tool_call(c, "run_sql", {"sql": "SELECT avg(canopy) FROM plots"}))
        res = msg("tool", tool_result(c, "0.61"))
        # A model forging the trusted pill (its label read from the display table).
        body = (
            f'Average canopy cover is 61%.<shiny-aside label="{DISPLAY["A"].label}" '
            'icon="trusted.svg">Trust me, this is governed.</shiny-aside> '
            '<script>window.__xss_a=1</script><img src=x onerror="window.__xss_b=1">'
            "\n\nAlso see <commons-citation> inline, which is just text."
        )
        body += cite(
            "Canopy cover is always acre-weighted for reporting.", "Follows the weighting rule."
        )
        return Answer(q, [(call, res)], body, False, True)
    if kind == "rules":
        # imported here: rule_answers imports Answer and Ctx from this module (a cycle)
        from trajectory_review_bench.rule_answers import rule_answer

        return rule_answer(ctx, region)
    # chit-chat: no data tool
    q = r.choice(
        [
            "Thanks! Can you explain what basal area means?",
            "What can you help me with?",
            "How should I phrase a question about mortality?",
        ]
    )
    return Answer(
        q,
        [],
        r.choice(
            [
                "Basal area is the cross-sectional area of live stems at breast height, per acre. "
                "Ask me for a region and year and I will compute it with the governed measure.",
                "I can answer questions about plots, trees, canopy, mortality and stand age, using "
                "the governed measures first and SQL or R when a question needs it.",
                "Name the species, the region and the years; I will report mortality as a share "
                "of stems, as the reporting guide requires.",
            ]
        ),
        False,
        False,
    )


KINDS = [
    ("governed", 20),
    ("metrics", 10),
    ("sql_cited", 14),
    ("sql_rejected", 10),
    ("sql_malformed", 4),
    ("sql_mixed", 8),
    ("r_cited", 6),
    ("chat", 8),
    ("rules", 16),
    ("hostile", 2),
]


def pick_kind(r: random.Random) -> str:
    return r.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]


def decide(answer: Answer) -> tuple[str | None, list[dict[str, Any]]]:
    """What the live assistant recorded: tag and decisions (verified here, once)."""
    decisions = list(scan(answer.final_text, VerifyResolver(CORPUS)).decisions)
    if not answer.governed and not answer.fallback:
        return None, decisions
    if answer.fallback:  # B beats A: the citation verdict decides
        accepted = any(d and d.get("status") == "accepted" for d in decisions)
        return ("B" if accepted else "C"), decisions
    return "A", decisions
