"""Hostile traces and broken logs: no markup escapes, no value stalls, no line takes the
rest down. Each test names the failure it pins (issue #7).

Long on purpose: the hostile inputs in one place, so a new one is added beside its kin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fixtures import CALL, RESULT, A, Q, Recorder
from trajectory_review.index.rows import STRUCTURED_MARK
from trajectory_review.listing.catalog import build_catalog
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.urls import conversation_href, parse_exchange, parse_link
from trajectory_review.model.reader import TraceReader
from trajectory_review.replay.citations import scan
from trajectory_review.replay.project import projected_markup, replay_exchange
from trajectory_review.replay.render import answer_markdown
from trajectory_review.replay.resolvers import RecordedResolver
from trajectory_review.reviews.log import ReviewEvent, ReviewLog, ReviewLogError
from trajectory_review.rules.checks import identifier_candidates
from trajectory_review.rules.registry import check, load_rules, profile_path
from trajectory_review.rules.registry import source_from_result as source
from trajectory_review.sources import SourceError, trace_files
from trajectory_review_bench import otlp

QUOTE = "Canopy cover is always acre-weighted for reporting."
LABEL = (
    'Guide" x=\'1\'\r\n\r\n<iframe srcdoc="<script>parent.__xss=1</script>"></iframe>'
    "<object data='http://127.0.0.1:9/o'></object><style>@import url(x)</style>"
)


def cited(label: str = LABEL) -> tuple[str, list[dict]]:
    text = f"Canopy is 61%.\n\n<commons-citation>\n\nWhy.\n\n> {QUOTE}\n\n</commons-citation>"
    return text, [{"quote": QUOTE, "status": "accepted", "label": label, "kind": "prose"}]


# -- 1. a recorded label never ends its tag on the page ---------------------------------------


def test_a_recorded_label_is_escaped_completely_on_the_page(read):
    r = Recorder()
    text, decisions = cited()
    r.turn("c1", [Q("q"), *_sql(), A(text)], tag="B", decisions=decisions)
    rep = replay_exchange(read(r).conversation("c1").exchanges[0])
    page = answer_markdown(rep)
    start = page.index("<shiny-aside")
    tag = page[start : page.index(">", start) + 1]
    attrs = tag[len("<shiny-aside") : -1]
    # inside the tag: no line break, no `<`, no quote but the attribute delimiters
    assert "\n" not in tag and "\r" not in tag and "<" not in attrs and "'" not in attrs
    assert attrs.count('"') == 6  # display="…" label="…" icon="…"
    assert "&lt;iframe srcdoc=&quot;" in tag and "&#13;&#10;&#13;&#10;" in tag
    # the export keeps exactly what commons streamed (`&` then `"` only)
    exported = projected_markup(rep)
    assert "label=\"Guide&quot; x='1'\r\n\r\n<iframe srcdoc=&quot;" in exported


# -- 2. no rule or scanner step is worse than linear ------------------------------------------


@contextmanager
def watchdog(seconds: int):
    """Fails the test instead of hanging it when a regression makes something super-linear
    (the cubic pattern took 56 s on 4,000 spaces; a linear pass over all of these takes
    well under a second). The time bound per KB lives in the benchmark, not here."""

    def _fail(*_args: object) -> None:
        raise AssertionError(f"still running after {seconds} s: not linear")

    old = signal.signal(signal.SIGALRM, _fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_every_rule_and_the_scanner_stay_linear_on_100kb_adversarial_inputs():
    from trajectory_review_bench.bench import adversarial_inputs

    profiles = [load_rules(), load_rules(profile_path("copilotkit"))]
    inputs = adversarial_inputs(100_000)
    assert len(inputs) >= 10
    with watchdog(60):
        for name, text in inputs.items():
            sources = [source(text), source({"urls": [text[:5000]]})]
            for cfg in profiles:
                results = check(text, sources, cfg)
                assert len(results) == 6, name
            scan(text, RecordedResolver([]))


def test_names_in_backticks_are_found_as_before_the_linear_rewrite():
    cfg = load_rules(profile_path("copilotkit")).of("grounded-identifiers")
    reply = (
        "Use `<CopilotKit />`, `<  CopilotSidebar  / >`, `useCopilotAction()`, "
        "`CopilotKit.useCopilotChat(x)` and `" + " " * 4000 + "`."
    )
    assert identifier_candidates(reply, cfg) == [
        "CopilotKit",
        "CopilotSidebar",
        "useCopilotAction",
        "useCopilotChat",
    ]
    # a backticked span longer than any name is code, not an identifier
    assert identifier_candidates("`CopilotKit" + "x" * 300 + "`", cfg) == []


# -- 3. one bad conversation drops itself, with a reason; the rest loads ----------------------


def hostile_traces(path: Path) -> Path:
    r = Recorder()
    r.turn("good", [Q("how tall?"), A("The stand is 31 m tall on average.")], tag="A")
    r.turn("deep", [Q("q"), A("a")], tag="A")
    r.turn("surrogate", [Q("q \ud800 here"), A("answer \udfff x")], tag="C")
    r.turn("future", [Q("when?"), A("Much later.")], tag="A")
    r.turn("wrong-shape", [Q("q"), A("a")], tag="A")
    for i, span in enumerate(r.spans):
        if span["name"] != otlp.TURN_SPAN:
            continue
        cid = _attr(span, "gen_ai.conversation.id")
        chat = r.spans[i + 2]
        if cid == "deep":
            _set_attr(chat, "gen_ai.input.messages", "[" * 100_000 + "]" * 100_000)
        elif cid == "surrogate":  # what a recorder escaping a lone surrogate writes
            for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
                raw = json.loads(_attr(chat, key))
                _set_attr(chat, key, json.dumps(raw, ensure_ascii=True))
        elif cid == "future":
            chat["endTimeUnixNano"] = str(300_000_000_000 * 10**9)  # year ~11,500
        elif cid == "wrong-shape":
            _set_attr(chat, "gen_ai.input.messages", '{"role": "user"}')
            _set_attr(chat, "gen_ai.output.messages", '"just a string"')
    lines = [json.dumps(otlp.envelope([s]), ensure_ascii=True) for s in r.spans]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_one_bad_conversation_never_stops_export_lint_or_the_app(tmp_path):
    path = hostile_traces(tmp_path / "t.jsonl")
    run = subprocess.run(
        [sys.executable, "-m", "trajectory_review.tools.cli", "export", str(path)],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout.decode("utf-8"))  # whole, and valid UTF-8
    by_id = {c["id"]: c for c in doc["conversations"]}
    assert set(by_id) == {"good", "surrogate", "future"}
    assert by_id["surrogate"]["exchanges"][0]["question"] == "q \ufffd here"
    assert by_id["future"]["last_active"].startswith("2262-04-11")
    messages = {(w["conversation_id"], w["message"].split(":")[0]) for w in doc["warnings"]}
    assert any(c == "deep" and m.startswith("unparseable messages") for c, m in messages)
    assert any(c == "wrong-shape" for c, _ in messages)  # why it was dropped, not lost
    assert any(c == "future" and "clamped" in m for c, m in _warnings(doc))
    assert doc["stats"]["dropped_conversations"] == 2
    lint = subprocess.run(
        [
            sys.executable,
            "-m",
            "trajectory_review.tools.cli",
            "lint",
            "--json",
            "--fail-on",
            "never",
            str(path),
        ],
        capture_output=True,
    )
    assert lint.returncode == 0 and json.loads(lint.stdout)["answers"]
    catalog = build_catalog(TraceReader.open([path]))
    assert catalog.conversation_count() == 3
    assert any(cid == "deep" for cid, _ in catalog.warnings)


def test_a_conversation_that_cannot_be_shown_says_why(tmp_path):
    reader = TraceReader.open([hostile_traces(tmp_path / "t.jsonl")])
    assert reader.conversation("wrong-shape") is None
    assert any("unparseable messages" in w for w in reader.why_dropped("wrong-shape"))
    assert reader.why_dropped("good") == []


# -- 4. the review log: every field validated, one guarded append path ------------------------


def test_review_log_lines_with_bad_fields_are_skipped_and_counted(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    good = ReviewEvent("note", "c1", "ann", 1, "fine")
    log.append(good)
    base = json.loads(good.to_json())
    bad = [
        '{"type":"note","conversation_id":"c1","author":"a","exchange":1e999,"ts":"t","id":"1"}',
        json.dumps({**base, "type": "verdict", "rule": ["x"], "verdict": "correct"}),
        json.dumps({**base, "type": "verdict", "rule": "r", "verdict": "maybe"}),
        json.dumps({**base, "exchange": True}),
        json.dumps({**base, "exchange": -3}),
        json.dumps({**base, "conversation_id": {"a": 1}}),
        json.dumps({**base, "author": None}),
        json.dumps({**base, "text": 5}),
        json.dumps({**base, "rule": "r"}),  # a note carrying a rule
        "[1, 2]",
    ]
    with open(log.path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(bad) + "\n")
    state = log.state()
    assert [e.text for e in state.events] == ["fine"]
    assert state.skipped_lines == len(bad)
    assert state.verdicts() == {} and state.ids_by_state()["noted"] == {"c1"}


def test_an_unusable_review_log_is_one_line_and_reading_goes_on(tmp_path):
    as_dir = ReviewLog(tmp_path / "logdir")
    (tmp_path / "logdir").mkdir()
    assert as_dir.state().error and "logdir" in as_dir.state().error
    assert as_dir.state().events == []
    with pytest.raises(ReviewLogError) as exc:
        as_dir.append(ReviewEvent("flag", "c1", "ann", 1))
    assert "\n" not in str(exc.value)
    assert "is a directory" in as_dir.writable_problem()

    (tmp_path / "afile").write_text("x")
    under_file = ReviewLog(tmp_path / "afile" / "r.jsonl")
    assert under_file.state().error is None or under_file.state().events == []
    with pytest.raises(ReviewLogError):
        under_file.append(ReviewEvent("verdict", "c1", "ann", 1, rule="r", verdict="correct"))
    assert "not a directory" in under_file.writable_problem()


def test_review_state_reads_only_what_was_appended(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    for i in range(3):
        log.append(ReviewEvent("note", "c1", "ann", 1, f"n{i}"))
    first = log.state()
    log.append(ReviewEvent("note", "c1", "bob", 1, "n3"))
    with open(log.path, "ab") as fh:
        fh.write(b'{"type":"note","conver')  # a write in flight: not an event yet
    second = log.state()
    assert [e.text for e in second.events] == ["n0", "n1", "n2", "n3"]
    assert [e.text for e in first.events] == ["n0", "n1", "n2"]  # states are not shared
    assert second.skipped_lines == 1


# -- 5. every skipped line is counted and named -----------------------------------------------


def test_long_binary_and_non_envelope_lines_are_counted_and_named(tmp_path, monkeypatch):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    good = [otlp.line([s]) for s in r.spans]
    body = (
        "\n".join(good[:1]).encode()
        + b"\n"
        + b'{"resourceSpans":[],"pad":"'
        + b"x" * (2 * 1024 * 1024)
        + b'"}\n'  # line 2: longer than the 1 MB limit set below
        + b'{"resourceSpans":[],"bad":"\xff\xfe"}\n'  # line 3: not UTF-8
        + b"{}\n[]\n1\n"  # lines 4-6: JSON, not envelopes
        + b"{torn\n"  # line 7
        + "\n".join(good[1:]).encode()
        + b"\n"
    )
    path = tmp_path / "t.jsonl"
    path.write_bytes(body)
    monkeypatch.setenv("TRAJECTORY_MAX_LINE_MB", "1")
    reader = TraceReader.open([path])
    s = reader.stats
    assert s.lines == len(good) + 6 and s.bad_lines == 6
    details = "\n".join(s.bad_line_details)
    for n, why in [
        (2, "longer than 1 MB"),
        (3, "not UTF-8"),
        (4, "not an OTLP envelope"),
        (5, "not an OTLP envelope"),
        (6, "not an OTLP envelope"),
        (7, "not JSON"),
    ]:
        assert f"t.jsonl:{n}: " in details and why in details.split(f"t.jsonl:{n}: ")[1]
    assert reader.conversation("c1").exchanges[0].tag == "A"


def test_a_torn_line_is_named_alone_though_it_starts_like_every_whole_line(tmp_path):
    r = Recorder()
    for i in range(3):
        r.turn(f"c{i}", [Q(f"q{i}"), A(f"a{i}")], tag="A")
    good = [otlp.line([s]) for s in r.spans]
    torn = good[0][: len(good[0]) // 2]  # a rotation cut it mid-write
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(good[:4] + [torn] + good[4:]) + "\n")
    s = TraceReader.open([path]).stats
    assert s.bad_lines == 1
    assert [d.split("t.jsonl:")[1] for d in s.bad_line_details] == ["5: not JSON, skipped"]


def test_two_envelopes_run_together_on_one_line_are_one_bad_line_and_the_rest_loads(tmp_path):
    # The line ends in "}" like every whole line, so the scan's quick parse takes it (and
    # fails on it); the index must still load every other line and name this one.
    r = Recorder()
    for i in range(3):
        r.turn(f"c{i}", [Q(f"q{i}"), A(f"a{i}")], tag="A")
    good = [otlp.line([s]) for s in r.spans]
    joined = good[0] + good[1]  # a writer that lost a newline
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([joined, *good[2:]]) + "\n")
    reader = TraceReader.open([path])
    s = reader.stats
    assert s.lines == len(good) - 1 and s.bad_lines == 1
    assert [d.split("t.jsonl:")[1] for d in s.bad_line_details] == ["1: not JSON, skipped"]
    assert reader.conversation("c2").exchanges[0].tag == "A"


def test_a_line_over_16_mb_is_read_up_to_the_configured_limit(tmp_path):
    r = Recorder()
    big = "x" * (17 * 1024 * 1024)
    r.turn("big", [Q("show the result"), *_sql(big), A("Here it is.")], tag="C")
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(otlp.line(r.spans[i : i + 3]) for i in range(0, 3, 3)) + "\n")
    reader = TraceReader.open([path])
    assert reader.stats.bad_lines == 0
    tools = reader.conversation("big").exchanges[0].tools()
    assert len(tools[0].result) == len(big)


# -- 6. deep links: any query string renders --------------------------------------------------


def test_unicode_digits_are_not_answer_numbers():
    assert parse_exchange("²") is None and parse_exchange("٣") is None
    assert parse_exchange("3") == 3 and parse_exchange(3) == 3
    assert parse_exchange("0") is None and parse_exchange(True) is None
    assert parse_exchange("9" * 40) is None
    assert "exchange=²" in parse_link("conversation=c1&exchange=²").ignored


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80), st.sampled_from(
    ["conversation", "exchange", "view", "tag", "rejected", "from", "to", "review", "rule",
     "flags", "q", "page", "x"]
))  # fmt: skip
def test_any_deep_link_parameter_parses_without_error(value, key):
    q = parse_qs(f"{key}={value}") or {key: [value]}
    notes = parse_link(q).ignored
    assert all(isinstance(n, str) and len(n) <= 80 for n in notes)
    parse_exchange(value)


# -- 7. search finds `_`, `%` and `\` ---------------------------------------------------------


def test_search_finds_underscores_percent_and_backslashes(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("what does run_sql do?"), A("It runs SQL.")], tag="C")
    r.turn("c2", [Q("is cover 50% or more?"), A("Yes.")], tag="A")
    r.turn("c3", [Q("path C:\\data please"), A("Here.")], tag="A")
    r.turn("c4", [Q("runxsql and 50x"), A("No.")], tag="A")
    catalog = build_catalog(TraceReader.open([r.write(tmp_path / "t.jsonl")]))

    def ids(q: str) -> list[str]:
        return list(catalog.page(Filters(q=q)).rows["conversation_id"])

    assert ids("run_sql") == ["c1"]
    assert ids("50%") == ["c2"]
    assert ids("C:\\data") == ["c3"]


# -- 8. sources: symlink loops and empty files ------------------------------------------------


def test_a_symlink_loop_is_skipped_and_named(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q1"), A("a1")], tag="A")
    r.write(tmp_path / "good.jsonl")
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    skipped: list[str] = []
    assert [p.name for p in trace_files([tmp_path], skipped)] == ["good.jsonl"]
    assert skipped == [f"{tmp_path / 'loop.jsonl'}: symlink loop, skipped"]
    reader = TraceReader.open([tmp_path])
    assert any("symlink loop" in w.message for w in reader.source_warnings())


def test_a_source_of_only_empty_files_says_so(tmp_path):
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "b.jsonl").write_text("")
    with pytest.raises(SourceError, match="only empty trace files"):
        trace_files([tmp_path])


# -- 9. the smaller ones ----------------------------------------------------------------------


def test_an_ancestor_chain_deeper_than_64_still_finds_its_record(tmp_path):
    r = Recorder()
    r.turn("deep-chain", [Q("q"), A("a")], tag="B", decisions=[])
    turn, agent = r.spans[0], r.spans[1]
    chain = []
    parent = turn["spanId"]
    for i in range(100):  # 100 wrapper spans between the turn span and the agent span
        sid = f"{0xABC000 + i:016x}"
        chain.append(otlp.span(turn["traceId"], sid, "wrapper", 1, 2, parent=parent))
        parent = sid
    agent["parentSpanId"] = parent
    r.spans.extend(chain)
    reader = TraceReader.open([r.write(tmp_path / "t.jsonl")])
    assert reader.conversation("deep-chain").exchanges[0].tag == "B"


def test_a_cycle_of_parents_is_named_and_stops_nothing_else(tmp_path):
    r = Recorder()
    r.turn("fine", [Q("q"), A("a")], tag="A")
    # a chat span under two wrappers that are each other's parent: its walk up for a
    # conversation id and a record can never reach a root
    a, b = "00000000000000aa", "00000000000000bb"
    looped = r.bare_chat([Q("q2"), A("a2")], parent=a)
    chat_id = r.spans[-1]["spanId"]
    r.spans.append(otlp.span(looped, a, "wrapper", 1, 2, parent=b))
    r.spans.append(otlp.span(looped, b, "wrapper", 1, 2, parent=a))
    reader = TraceReader.open([r.write(tmp_path / "t.jsonl")])
    said = [w.message for w in reader.source_warnings()]
    assert [w for w in said if "ancestors" in w] == [
        f"chat span {looped}/{chat_id}: more than 1024 ancestors (or a cycle); "
        "the walk up for its conversation id and record stopped there"
    ]
    assert reader.conversation("fine").exchanges[0].tag == "A"
    # with no conversation id on the way, the looped chat is a conversation of its trace
    assert reader.conversation(looped).exchanges[0].tag is None


def test_duplicate_span_ids_with_different_content_are_named(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("q"), A("a")], tag="A")
    twin = json.loads(json.dumps(r.spans[2]))
    twin["endTimeUnixNano"] = str(int(twin["endTimeUnixNano"]) + 5)
    (tmp_path / "a.jsonl").write_text(otlp.line(r.spans) + "\n")
    (tmp_path / "b.jsonl").write_text(otlp.line([twin]) + "\n")
    reader = TraceReader.open([tmp_path])
    text = " ".join(w.message for w in reader.source_warnings())
    assert "recorded 2 times with different content" in text and "a.jsonl is used" in text
    # an identical copy (a hard-linked rotated file) is no news
    (tmp_path / "b.jsonl").write_text(otlp.line([r.spans[2]]) + "\n")
    assert not any("different" in w.message for w in TraceReader.open([tmp_path]).source_warnings())


def test_a_string_written_as_the_index_marks_a_structured_value_stays_a_string(tmp_path):
    # The index keeps a string value as itself and anything else behind a mark
    # (index.rows.stored_attribute); a recorded string that starts with the mark must
    # not pass for a structured value: here, a tag "A" smuggled in as AnyValue JSON.
    r = Recorder()
    r.turn("forged", [Q("q"), A("a")], tag="C")
    r.turn("plain", [Q("q2"), A("a2")], tag="B")
    forged = STRUCTURED_MARK + json.dumps({"stringValue": "A"})
    for span in r.spans:
        if span["name"] == otlp.TURN_SPAN and _attr(span, "gen_ai.conversation.id") == "forged":
            _set_attr(span, "commons.provenance.tag", forged)
    reader = TraceReader.open([r.write(tmp_path / "t.jsonl")])
    assert reader.conversation("forged").exchanges[0].tag is None
    assert reader.conversation("plain").exchanges[0].tag == "B"


def test_records_of_odd_value_kinds_show_no_claim_and_the_rest_loads(tmp_path):
    # Values the index stores behind the mark as rebuilt AnyValue JSON: a double past
    # its range (written back as Infinity), an empty value, a bare string; none is a tag.
    odd = {"inf": {"doubleValue": 1e999}, "empty": {}, "bare": "A", "flag": {"boolValue": True}}
    r = Recorder()
    for cid in odd:
        r.turn(cid, [Q("q"), A("a")], tag="A")
    r.turn("plain", [Q("q2"), A("a2")], tag="B")
    for span in r.spans:
        cid = _attr(span, "gen_ai.conversation.id")
        if span["name"] == otlp.TURN_SPAN and cid in odd:
            for a in span["attributes"]:
                if a["key"] == "commons.provenance.tag":
                    a["value"] = odd[cid]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(otlp.envelope([s])) for s in r.spans) + "\n")
    reader = TraceReader.open([path])
    for cid in odd:
        assert reader.conversation(cid).exchanges[0].tag is None, cid
    assert reader.conversation("plain").exchanges[0].tag == "B"


def test_messages_recorded_as_structured_values_read_as_their_json_strings_do(tmp_path):
    r = Recorder()
    r.turn("c1", [Q("how tall?"), A("The stand is 31 m tall on average.")], tag="A")
    strings = TraceReader.open([r.write(tmp_path / "s.jsonl")]).conversation("c1")
    for span in r.spans:
        for a in span["attributes"]:
            if a["key"] in ("gen_ai.input.messages", "gen_ai.output.messages"):
                a["value"] = otlp.any_value(json.loads(a["value"]["stringValue"]))
    structured = TraceReader.open([r.write(tmp_path / "v.jsonl")]).conversation("c1")
    assert [(e.question, e.answer_raw, e.tag) for e in structured.exchanges] == [
        (e.question, e.answer_raw, e.tag) for e in strings.exchanges
    ]
    assert structured.exchanges[0].question == "how tall?"


@given(st.text(min_size=1, max_size=40), st.integers(min_value=1, max_value=999))
def test_links_name_any_conversation_id_exactly(cid, ex):
    q = parse_qs(conversation_href(cid, ex).lstrip("?"), keep_blank_values=True)
    assert q["conversation"] == [cid] and q["exchange"] == [str(ex)]


# -- helpers ----------------------------------------------------------------------------------


def _sql(result: str = "0.61") -> list[dict]:
    return [CALL("c1", "run_sql", {"sql": "SELECT 1"}), RESULT("c1", result)]


def _attr(span: dict, key: str) -> str | None:
    for a in span["attributes"]:
        if a["key"] == key:
            return a["value"].get("stringValue")
    return None


def _set_attr(span: dict, key: str, value: str) -> None:
    for a in span["attributes"]:
        if a["key"] == key:
            a["value"] = {"stringValue": value}


def _warnings(doc: dict) -> list[tuple[str | None, str]]:
    return [(w["conversation_id"], w["message"]) for w in doc["warnings"]]
