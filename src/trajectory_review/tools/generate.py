"""Realistic synthetic traces: a forest-inventory data assistant, recorded as `commons` does.

The generator plays the live assistant: it writes raw answers with citation markup, runs
the real scanner in verify mode against a trusted corpus to decide each citation, derives
the provenance tag from the tools that ran, and records all of it on turn spans. Then it
edits, restores and switches some conversations, adds title calls, hostile markup, broken
records, rotated files, a hard link and a line cut mid-write.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trajectory_review.replay.citations import scan
from trajectory_review.replay.provenance import DISPLAY
from trajectory_review.replay.resolvers import CorpusEntry, VerifyResolver
from trajectory_review.tools import otlp
from trajectory_review.tools.otlp import msg, text, tool_call, tool_result

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

    def hex(self, width: int) -> str:
        return f"{self.rnd.getrandbits(width * 4):0{width}x}"

    def tick(self, lo: float = 0.2, hi: float = 3.0) -> int:
        self.t += int(self.rnd.uniform(lo, hi) * 1e9)
        return self.t


def _cite(quote: str, reason: str) -> str:
    return f"\n\n<commons-citation>\n\n{reason}\n\n> {quote}\n\n</commons-citation>"


def _answer(ctx: Ctx, kind: str) -> Answer:
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
            body += _cite(
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
            body += _cite(
                "Table trees(tree_id, plot_id, species, dbh_in, status).",
                "The schema confirms the join key and units.",
            )
        if kind == "sql_rejected" or (kind == "sql_mixed" and r.random() < 0.5):
            body += _cite(
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
        body += _cite(
            "Canopy cover is always acre-weighted for reporting.", "Follows the weighting rule."
        )
        return Answer(q, [(call, res)], body, False, True)
    if kind == "rules":
        return _rule_answer(ctx, region)
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


def _rule_answer(ctx: Ctx, region: str) -> Answer:
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


def _pick_kind(r: random.Random) -> str:
    return r.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]


def _decide(answer: Answer) -> tuple[str | None, list[dict[str, Any]]]:
    """What the live assistant recorded: tag and decisions (verified here, once)."""
    decisions = list(scan(answer.final_text, VerifyResolver(CORPUS)).decisions)
    if not answer.governed and not answer.fallback:
        return None, decisions
    if answer.fallback:  # B beats A: the citation verdict decides
        accepted = any(d and d.get("status") == "accepted" for d in decisions)
        return ("B" if accepted else "C"), decisions
    return "A", decisions


@dataclass
class Style:
    conversation_id: str
    stamp_chat: bool  # newer recorders stamp the id on chat spans too
    record: bool = True  # turn spans present
    model: str = "claude-sonnet-4"


def _record_turn(
    ctx: Ctx,
    style: Style,
    history: list[dict[str, Any]],
    answer: Answer,
    tag_override: Any = "keep",
    candidates_override: str | None = None,
) -> None:
    """Spans for one streamed answer: turn > invoke_agent > chat (per round) + tools."""
    trace = ctx.hex(32)
    turn_id, agent_id = ctx.hex(16), ctx.hex(16)
    start = ctx.tick(5, 600)
    hist = list(history) + [msg("user", text(answer.question))]
    chats: list[dict[str, Any]] = []
    cid = style.conversation_id if style.stamp_chat else None

    def chat_span(
        output: dict[str, Any], busy: tuple[float, float], usage: tuple[int, int]
    ) -> dict[str, Any]:
        """One model round trip: it sees the whole history so far and answers `output`."""
        s = ctx.tick(0.1, 0.4)
        e = ctx.tick(*busy)
        return otlp.span(
            trace,
            ctx.hex(16),
            f"chat {style.model}",
            s,
            e,
            agent_id,
            otlp.chat_attrs(hist, [output], SYSTEM, style.model, cid, usage),
            kind=3,
        )

    for call_msg, result_msg in answer.rounds:
        chats.append(chat_span(call_msg, (0.8, 4.0), (400 + 30 * len(hist), 60)))
        hist.append(call_msg)
        if result_msg is not None:
            ts = ctx.tick(0.05, 0.2)
            for part in call_msg["parts"]:
                if part["type"] == "tool_call":
                    chats.append(
                        otlp.span(
                            trace,
                            ctx.hex(16),
                            f"execute_tool {part['name']}",
                            ts,
                            ctx.tick(0.1, 2.5),
                            agent_id,
                            {
                                "gen_ai.operation.name": "execute_tool",
                                "gen_ai.tool.name": part["name"],
                                "gen_ai.tool.call.id": part["id"],
                            },
                        )
                    )
            hist.append(result_msg)
    final = msg("assistant", text(answer.final_text))
    chats.append(
        chat_span(final, (1.5, 9.0), (500 + 30 * len(hist), 40 + len(answer.final_text) // 4))
    )
    hist.append(final)
    end = ctx.tick(0.01, 0.05)
    if style.record:
        tag, decisions = _decide(answer)
        attrs = otlp.turn_attrs(style.conversation_id, None, None)
        use_tag = tag if tag_override == "keep" else tag_override
        if use_tag is not None:
            attrs["commons.provenance.tag"] = use_tag
        attrs["commons.citation.candidates"] = (
            candidates_override
            if candidates_override is not None
            else json.dumps(decisions, ensure_ascii=False)
        )
        ctx.spans.append(otlp.span(trace, turn_id, otlp.TURN_SPAN, start, end, "", attrs))
    # Without a turn span (an unrecorded assistant) invoke_agent is the root.
    ctx.spans.append(
        otlp.span(
            trace,
            agent_id,
            "invoke_agent",
            start,
            end,
            turn_id if style.record else None,
            {"gen_ai.operation.name": "invoke_agent"},
        )
    )
    ctx.spans.extend(chats)
    history[:] = hist


def _title_call(ctx: Ctx, question: str) -> None:
    trace = ctx.hex(32)
    s, e = ctx.tick(0.1, 0.3), ctx.tick(0.3, 1.0)
    ctx.spans.append(
        otlp.span(
            trace,
            ctx.hex(16),
            "chat gpt-4o-mini",
            s,
            e,
            "",
            otlp.chat_attrs(
                [msg("user", text(question))],
                [msg("assistant", text(question[:40]))],
                TITLE_SYSTEM,
                "gpt-4o-mini",
            ),
            kind=3,
        )
    )


def _conversation(ctx: Ctx, n: int) -> None:
    r = ctx.rnd
    day = r.randrange(SPAN_DAYS)
    ctx.t = START_NS + day * 86_400 * 10**9 + r.randrange(7 * 3600, 19 * 3600) * 10**9
    # commons' ids: a timestamp with milliseconds and a random suffix
    when = datetime.fromtimestamp(ctx.t / 1e9, UTC)
    suffix = "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(10))
    conv_id = f"{when:%Y%m%dt%H%M%S}.{r.randrange(1000):03d}-{suffix}"
    style = Style(
        conv_id,
        stamp_chat=r.random() < 0.5,
        model=r.choice(["claude-sonnet-4", "claude-sonnet-4", "gpt-4.1"]),
    )
    scenario = r.choices(
        ["linear", "edited", "restored", "switched", "unrecorded", "conflict", "badattr"],
        weights=[70, 8, 6, 5, 5, 2, 2],
    )[0]
    n_ex = r.choices([1, 2, 3, 4], weights=[40, 30, 20, 10])[0]
    history: list[dict[str, Any]] = []
    if scenario == "unrecorded":
        style.record = False
        style.stamp_chat = r.random() < 0.5  # else each turn's trace is its own conversation
    answers = [_answer(ctx, _pick_kind(r)) for _ in range(n_ex)]
    if r.random() < 0.8:
        _title_call(ctx, answers[0].question)
    if scenario == "restored":
        # Earlier exchanges were recorded by another session; only the last call here.
        silent = Ctx(ctx.rnd, ctx.ids, ctx.t)
        for a in answers[:-1]:
            _record_turn(silent, style, history, a)
        ctx.t = silent.t
        _record_turn(ctx, style, history, answers[-1])
        return
    for i, a in enumerate(answers):
        if scenario == "conflict" and i == 0:
            snapshot = list(history)
            _record_turn(ctx, style, history, a)
            _record_turn(ctx, style, snapshot, a, tag_override="A" if _decide(a)[0] != "A" else "C")
            continue
        if scenario == "badattr" and i == 0:
            _record_turn(ctx, style, history, a, candidates_override='[{"quote": ')
            continue
        _record_turn(ctx, style, history, a)
    if scenario == "edited" and n_ex >= 2:
        # The user edits the last question: the old answer becomes an abandoned branch.
        base = history[: _last_plain_user(history)]
        _record_turn(ctx, style, base, _answer(ctx, _pick_kind(r)))
    elif scenario == "switched":
        # The id is reused for a new conversation (older shinychat history controller).
        fresh: list[dict[str, Any]] = []
        _record_turn(ctx, style, fresh, _answer(ctx, _pick_kind(r)))


def _last_plain_user(history: list[dict[str, Any]]) -> int:
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        if m["role"] == "user" and any(p["type"] == "text" for p in m["parts"]):
            return i
    return 0


def generate(
    outdir: str | os.PathLike[str],
    conversations: int = 200,
    seed: int = 7,
    spans_per_file: int | None = None,
    gzip_oldest: bool = True,
    cut_last_line: bool = True,
) -> dict[str, int]:
    """Write rotated trace files; returns counts. Deterministic for a seed."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    if spans_per_file is None:
        # about four rotated files for a small sample, files of ~20k spans for a large one
        spans_per_file = max(50, min(20_000, conversations * 11 // 4))
    for old in out.glob("trace-*"):
        old.unlink()
    rnd = random.Random(seed)
    ctx = Ctx(rnd, iter(range(10**12)), START_NS)
    files: list[Path] = []
    buf: list[str] = []
    n_spans = 0
    file_no = 1
    pending: list[dict[str, Any]] = []

    def flush_file() -> None:
        nonlocal buf, file_no
        if not buf:
            return
        path = out / f"trace-{file_no}.jsonl"
        path.write_text("\n".join(buf) + "\n", encoding="utf-8")
        files.append(path)
        buf, file_no = [], file_no + 1

    for n in range(conversations):
        ctx.spans = []
        _conversation(ctx, n)
        pending.extend(ctx.spans)
        n_spans += len(ctx.spans)
        # exporters batch a few spans per line, out of order
        rnd.shuffle(pending)
        while len(pending) >= 4:
            k = rnd.randint(1, 4)
            buf.append(otlp.line(pending[:k]))
            pending = pending[k:]
        if len(buf) * 2.5 >= spans_per_file:
            flush_file()
    if pending:
        buf.append(otlp.line(pending))
    if buf:  # a stray log line, as a misconfigured exporter writes
        buf.insert(len(buf) // 2, "2026-11-02 10:14:07 WARN exporter retry 1/3")
    flush_file()
    if cut_last_line and files:
        last = files[-1]
        data = last.read_text(encoding="utf-8")
        # The newest file was cut mid-write: append half of a copy of its first line.
        first = data.split("\n", 1)[0]
        last.write_text(data + first[: len(first) // 2], encoding="utf-8")
    if gzip_oldest and len(files) > 2:
        oldest = files[0]
        gz = oldest.with_name(oldest.name + ".gz")
        # mtime=0: the same seed writes byte-identical files
        with open(oldest, "rb") as src, gzip.GzipFile(gz, "wb", mtime=0) as dst:
            dst.write(src.read())
        oldest.unlink()
        files[0] = gz
    latest = out / "trace-latest.jsonl"
    if files:
        os.link(files[-1], latest)
    return {"files": len(files) + 1, "spans": n_spans, "conversations": conversations}
