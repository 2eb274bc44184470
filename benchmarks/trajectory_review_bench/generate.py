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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trajectory_review_bench import otlp
from trajectory_review_bench.answers import (
    SPAN_DAYS,
    START_NS,
    SYSTEM,
    TITLE_SYSTEM,
    Answer,
    Ctx,
    decide,
    pick_kind,
    write_answer,
)
from trajectory_review_bench.otlp import msg, text


@dataclass
class Style:
    conversation_id: str
    stamp_chat: bool  # newer recorders stamp the id on chat spans too
    record: bool = True  # turn spans present
    model: str = "claude-sonnet-4"


# Long on purpose: one streamed answer's spans, in the order commons records them.
def _record_turn(
    ctx: Ctx,
    style: Style,
    history: list[dict[str, Any]],
    answer: Answer,
    tag_override: Any = "keep",
    candidates_override: str | None = None,
) -> None:
    """Spans for one streamed answer: turn > invoke_agent > chat (per round) + tools.

    Long because it writes the spans in the order commons does, each one's attributes
    spelled out (the recorded shape is what the generator is for)."""
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
        tag, decisions = decide(answer)
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
    ctx.t = ctx.start + day * 86_400 * 10**9 + r.randrange(7 * 3600, 19 * 3600) * 10**9
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
    answers = [write_answer(ctx, pick_kind(r)) for _ in range(n_ex)]
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
            _record_turn(ctx, style, snapshot, a, tag_override="A" if decide(a)[0] != "A" else "C")
            continue
        if scenario == "badattr" and i == 0:
            _record_turn(ctx, style, history, a, candidates_override='[{"quote": ')
            continue
        _record_turn(ctx, style, history, a)
    if scenario == "edited" and n_ex >= 2:
        # The user edits the last question: the old answer becomes an abandoned branch.
        base = history[: _last_plain_user(history)]
        _record_turn(ctx, style, base, write_answer(ctx, pick_kind(r)))
    elif scenario == "switched":
        # The id is reused for a new conversation (older shinychat history controller).
        fresh: list[dict[str, Any]] = []
        _record_turn(ctx, style, fresh, write_answer(ctx, pick_kind(r)))


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
    start_ns: int | None = None,
) -> dict[str, int]:
    """Write rotated trace files; returns counts. Deterministic for a seed (and start:
    the first conversation's time, default START_NS)."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    if spans_per_file is None:
        # about four rotated files for a small sample, files of ~20k spans for a large one
        spans_per_file = max(50, min(20_000, conversations * 11 // 4))
    for old in out.glob("trace-*"):
        old.unlink()
    rnd = random.Random(seed)
    start = START_NS if start_ns is None else start_ns
    ctx = Ctx(rnd, iter(range(10**12)), start, start=start)
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


def long_conversation(
    path: str | os.PathLike[str], turns: int = 20_000, after_ns: int | None = None
) -> Path:
    """One conversation of `turns` answers (~1.8 KB each: 36 MB for 20,000), as commons
    records a long conversation restored into a new session: one chat call holding the
    whole history, its turn span recording the last answer. Newer than `after_ns`, so a
    list shows it first."""
    history: list[dict[str, Any]] = []
    for i in range(1, turns + 1):
        history.append(msg("user", text(f"Turn {i}: how many plots were measured in stand S-{i}?")))
        body = (
            f"Stand S-{i} had {i * 3 % 997} plots measured in the last cycle, across "
            f"{i % 7 + 1} regions; canopy cover averaged {i % 100}% and basal area "
            f"{80 + i % 150} ft²/ac. "
        ) * 12
        history.append(msg("assistant", text(body)))
    start = (after_ns or START_NS) + 60 * 10**9
    cid = f"long-{turns}"
    spans = [
        otlp.span("1a" * 16, "2b" * 8, otlp.TURN_SPAN, start, start + 9 * 10**9, "",
                  otlp.turn_attrs(cid, "A", [])),
        otlp.span("1a" * 16, "3c" * 8, "chat claude-sonnet-4", start + 10**9,
                  start + 8 * 10**9, "2b" * 8,
                  otlp.chat_attrs(history[:-1], history[-1:], SYSTEM, "claude-sonnet-4", cid,
                                  (400_000, 500)), kind=3),
    ]  # fmt: skip
    out = Path(path)
    out.write_text(otlp.line(spans) + "\n", encoding="utf-8")
    return out


def commons_today(path: str | os.PathLike[str], start_ns: int | None = None) -> Path:
    """One conversation recorded as today's commons records it (the shipped traces'
    `commons-today.jsonl`): each turn's record on its `commons_provenance` span (the turn
    span kept as it started, without tag or candidates, as Posit Connect may keep it),
    reminders appended to the user's turns for the model, and a document (an artifact)
    handed to the user beside a verified citation."""
    from trajectory_review_bench.otlp import tool_call, tool_result

    cid = "20261202t101500.000-commons-today"
    start = start_ns if start_ns is not None else START_NS + (SPAN_DAYS + 2) * 86_400 * 10**9
    concise = "<reminder>Be concise as a default.</reminder>"
    q1 = msg("user", text(f"How many plots were measured in Elk Hollow in 2022?\n{concise}"))
    call1 = msg("assistant", tool_call("call_m1", "call_measure",
                                       {"measure": "plots_measured", "stand": "Elk Hollow",
                                        "year": 2022}))  # fmt: skip
    res1 = msg("tool", tool_result("call_m1", "142"))
    a1 = msg("assistant", text("142 plots were measured in Elk Hollow in 2022."))
    q2 = msg("user", text(f"Write me a short report on canopy cover there.\n{concise}"))
    sql = "SELECT avg(canopy) FROM plots WHERE stand = 'Elk Hollow' AND year = 2022"
    call2 = msg("assistant", tool_call("call_s1", "run_sql", {"sql": sql}))
    res2 = msg("tool", tool_result("call_s1", "0.61"))
    quote = "Canopy cover is always acre-weighted for reporting."
    a2 = msg("assistant", text(
        "Here is the report.\n\n"
        '<artifact id="elk-hollow-canopy" title="Elk Hollow canopy cover, 2022">\n'
        "---\ntitle: Elk Hollow canopy cover, 2022\n---\n\n"
        "# Canopy cover\n\nAverage canopy cover across the 142 plots was **61%**, "
        "acre-weighted.\n\n| stand | canopy |\n|---|---|\n| Elk Hollow | 61% |\n"
        "</artifact>\n\n"
        "Average canopy cover in Elk Hollow was 61% in 2022.\n\n"
        f"<commons-citation>\n\nThe weighting rule.\n\n> {quote}\n\n</commons-citation>"
    ))  # fmt: skip
    accepted = [{"quote": quote, "status": "accepted", "label": "Reporting guide",
                 "kind": "prose"}]  # fmt: skip
    spans: list[dict[str, Any]] = []
    turns = [
        ([q1], [call1], [res1], a1, "A", []),
        ([q1, call1, res1, a1, q2], [call2], [res2], a2, "B", accepted),
    ]
    for n, (before, call, result, answer, tag, decisions) in enumerate(turns):
        t0 = start + n * 120 * 10**9
        trace, turn_id, agent_id = f"{n + 1:032x}"[::-1], f"7{n:015x}", f"8{n:015x}"
        hist = list(before)
        spans.append(otlp.span(trace, turn_id, otlp.TURN_SPAN, t0, t0 + 9 * 10**9, "",
                               {"gen_ai.conversation.id": cid}))  # fmt: skip
        spans.append(otlp.span(trace, f"9{n:015x}", otlp.PROVENANCE_SPAN, t0 + 10**8,
                               t0 + 2 * 10**8, turn_id,
                               otlp.turn_attrs(cid, tag, decisions) | {
                                   "gen_ai.conversation.id": None}))  # fmt: skip
        spans.append(otlp.span(trace, agent_id, "invoke_agent", t0, t0 + 9 * 10**9, turn_id,
                               {"gen_ai.operation.name": "invoke_agent"}))  # fmt: skip
        spans.append(otlp.span(trace, f"a{n:015x}", "chat claude-sonnet-4", t0 + 10**9,
                               t0 + 3 * 10**9, agent_id,
                               otlp.chat_attrs(hist, call, SYSTEM, "claude-sonnet-4", cid,
                                               (900, 40)), kind=3))  # fmt: skip
        hist += call + result
        spans.append(otlp.span(trace, f"b{n:015x}", "chat claude-sonnet-4", t0 + 4 * 10**9,
                               t0 + 8 * 10**9, agent_id,
                               otlp.chat_attrs(hist, [answer], SYSTEM, "claude-sonnet-4",
                                               cid, (1400, 180)), kind=3))  # fmt: skip
    out = Path(path)
    out.write_text("\n".join(otlp.line(spans[i : i + 5]) for i in range(0, len(spans), 5))
                   + "\n", encoding="utf-8")  # fmt: skip
    return out
