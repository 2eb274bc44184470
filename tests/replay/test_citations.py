"""The scanner, rule by rule (docs/spec.md §3-4), plus chunk-invariance properties."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_review.replay.citations import (
    AsideSegment,
    TextSegment,
    normalise_quote,
    parse_body,
    scan,
)
from trajectory_review.replay.markup import aside_markup
from trajectory_review.replay.project import segments_markup
from trajectory_review.replay.render import PAGE
from trajectory_review.replay.resolvers import CorpusEntry, RecordedResolver, VerifyResolver

QUOTE = "Canopy cover is always acre-weighted for reporting."
CORPUS = [
    CorpusEntry("Plots are 1/10 acre.", "inventory", "definition"),
    CorpusEntry(QUOTE + " Always.", "documentation", "prose"),
]
ACC = {"quote": QUOTE, "status": "accepted", "label": "documentation", "kind": "prose"}


def cite(quote: str = QUOTE, reason: str = "Follows the weighting rule.") -> str:
    return f"<commons-citation>\n\n{reason}\n\n> {quote}\n\n</commons-citation>"


def live(text: str):
    return scan(text, VerifyResolver(CORPUS))


def replay(text: str, decisions):
    return scan(text, RecordedResolver(decisions))


def out_text(result) -> str:
    return segments_markup(result.segments)


def test_an_accepted_citation_becomes_an_aside_and_the_text_around_it_is_kept_exactly():
    res = live("Average canopy cover is 61%.\n\n" + cite() + "\n\nNext.")
    assert res.segments == (
        TextSegment("Average canopy cover is 61%.\n\n"),
        AsideSegment("documentation", "prose", "Follows the weighting rule.", QUOTE),
        TextSegment("\n\nNext."),
    )
    assert res.decisions == (ACC,)


def test_export_markup_is_what_commons_streams():
    res = live("Average canopy cover is 61%.\n\n" + cite())
    assert out_text(res) == (
        'Average canopy cover is 61%.\n\n<shiny-aside display="compact" label="documentation" '
        'icon="commons-icons/citation-prose.svg">Follows the weighting rule.\n\n> '
        + QUOTE
        + "</shiny-aside>"
    )


def test_an_aside_quote_is_trimmed_and_every_line_prefixed_and_an_empty_reason_left_out():
    body = "\n>   first line\n>\n> second line  \n"
    decision = {**ACC, "quote": "first line second line"}
    res = replay("Text.\n<commons-citation>" + body + "</commons-citation>", [decision])
    aside = AsideSegment("documentation", "prose", "", "  first line\n\nsecond line  ")
    assert res.segments[1] == aside
    tail = 'citation-prose.svg">> first line\n> \n> second line</shiny-aside>'
    assert out_text(res).endswith(tail)


def test_text_before_an_aside_keeps_a_closing_code_fence_and_a_table_row_intact():
    fence = "```sql\nSELECT 1\n```\n" + cite() + "\nAfter."
    out = out_text(live(fence))
    assert out.startswith("```sql\nSELECT 1\n```\n<shiny-aside")  # the fence still closes
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n" + cite()
    assert out_text(live(table)).startswith("| a | b |\n|---|---|\n| 1 | 2 |\n<shiny-aside")


def test_rejected_citation_renders_nothing_and_keeps_surrounding_text():
    res = live("Answer.\n" + cite("a fabricated quote goes here") + "\nMore.")
    assert out_text(res) == "Answer.\n\nMore."
    assert res.decisions == ({"quote": "a fabricated quote goes here", "status": "rejected"},)


def test_short_quote_is_rejected_even_when_it_matches():
    assert live(cite("Plots")).decisions[0]["status"] == "rejected"


def test_first_matching_corpus_entry_wins():
    corpus = [
        CorpusEntry("alpha beta gamma delta", "first", "prose"),
        CorpusEntry("alpha beta gamma delta", "second", "schema"),
    ]
    res = scan(cite("beta gamma delta"), VerifyResolver(corpus))
    assert res.decisions[0]["label"] == "first"


def test_normalisation_removes_emphasis_and_straightens_quotes():
    assert (
        normalise_quote("  *Canopy*  `cover`\u2014is \u201cweighted\u201d  ")
        == 'Canopy cover-is "weighted"'
    )
    assert (
        live(cite("*Canopy cover* is always   acre-weighted")).decisions[0]["status"] == "accepted"
    )


# What normalising does, spelled out once: every mapped character replaced or dropped,
# then whitespace runs collapsed and trimmed. The function takes a shorter way on ASCII.
_MAP = {"*": "", "_": "", "`": "", "\u2018": "'", "\u2019": "'", "\u201c": '"',
        "\u201d": '"', "\u2013": "-", "\u2014": "-"}  # fmt: skip


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from([*_MAP, " ", "\n", "\t", "\u00a0", "a", "Z", "é"])))
def test_normalisation_is_the_same_whatever_the_characters(text):
    expected = " ".join("".join(_MAP.get(c, c) for c in text).split())
    assert normalise_quote(text) == expected


def test_citation_opens_only_at_line_start():
    text = "See <commons-citation>\n> " + QUOTE + "\n</commons-citation> inline."
    res = live(text)
    assert res.decisions == ()
    assert out_text(res) == "See <commons-citation>\n> " + QUOTE + "\n inline."


def test_citation_at_stream_start_opens():
    assert live(cite()).decisions == (ACC,)


def test_reserved_tags_match_case_insensitively():
    res = live("x\n<COMMONS-Citation>\n> " + QUOTE + "\n</Commons-CITATION>")
    assert res.decisions == (ACC,)


def test_model_written_aside_is_dropped_with_its_body_anywhere():
    res = live('Fact<Shiny-Aside label="Official" icon="x">I am a source</SHINY-aside>, more.')
    assert out_text(res) == "Fact, more."


def test_stray_closing_tags_are_dropped():
    assert out_text(live("a</commons-citation>b</shiny-aside>c")) == "abc"


def test_aside_lookalike_is_text():
    assert out_text(live("<shiny-asides> <shiny-asidex>")) == "<shiny-asides> <shiny-asidex>"


def test_nested_reserved_tag_abandons_the_citation_without_a_decision():
    text = (
        "Fact.\n<commons-citation>\n> " + QUOTE + '\n<shiny-aside label="x">y</shiny-aside>'
        "\n</commons-citation>after"
    )
    res = live(text)
    assert res.decisions == ()
    assert out_text(res) == "Fact.\nafter"


def test_nested_citation_discards_through_the_next_close():
    text = "<commons-citation>\na\n<commons-citation>\n> q\n</commons-citation>tail"
    res = live(text)
    assert res.decisions == () and out_text(res) == "tail"


def test_overlong_body_is_discarded_without_a_decision():
    body = "r" * 16_400
    res = live(f"x\n<commons-citation>\n{body}\n> {QUOTE}\n</commons-citation>y")
    assert res.decisions == () and out_text(res) == "x\ny"


def test_body_at_the_limit_is_still_parsed():
    reason = "r" * (16_384 - len(f"\n\n> {QUOTE}\n"))
    res = live(f"<commons-citation>{reason}\n\n> {QUOTE}\n</commons-citation>")
    assert res.decisions == (ACC,)


def test_two_quote_runs_are_malformed():
    res = live("<commons-citation>\n> one quote here\nreason\n> two\n</commons-citation>")
    assert res.decisions == ({"quote": None, "status": "malformed"},)
    assert out_text(res) == ""


def test_lazy_continuation_is_malformed_only_when_it_splits_the_run():
    parsed = parse_body("why\n> first line\n>\n> third line\nwrapped without marker")
    assert parsed is not None and parsed.quote == "first line\n\nthird line"
    assert parsed.reason == "why\nwrapped without marker"
    assert parse_body("no quote at all") is None


def test_unfinished_citation_at_end_is_dropped():
    assert out_text(live("Answer.\n<commons-citation>\n> " + QUOTE)) == "Answer.\n"


def test_held_back_partial_tag_is_emitted_at_finish():
    assert out_text(live("Answer.\n<commons-cit")) == "Answer.\n<commons-cit"
    assert out_text(live("a <shiny-aside")) == "a <shiny-aside"


def test_unfinished_model_aside_is_dropped():
    assert out_text(live('ok<shiny-aside label="x">never closed')) == "ok"


def test_whitespace_before_a_rejected_citation_is_kept():
    res = live("One.\n\n" + cite("not in the corpus at all") + "\n\nTwo.")
    assert out_text(res) == "One.\n\n\n\nTwo."


# -- replay ------------------------------------------------------------------------------


def test_replay_renders_accepted_decision_without_reverifying():
    quote = "not in any corpus, but recorded as accepted"
    res = replay(
        cite(quote),
        [{"quote": quote, "status": "accepted", "label": "glossary", "kind": "definition"}],
    )
    assert res.segments == (
        AsideSegment("glossary", "definition", "Follows the weighting rule.", quote),
    )


def test_replay_renders_nothing_for_rejected_missing_mismatch_or_unknown_kind():
    for decisions in (
        [{"quote": QUOTE, "status": "rejected"}],
        [],
        [dict(ACC, quote="a different quote entirely")],
        [dict(ACC, kind="rumour")],
        [dict(ACC, label="")],
        [dict(ACC, label=None)],
        ["not an object"],
    ):
        assert replay("x\n" + cite(), decisions).segments == (TextSegment("x\n"),), decisions


def test_replay_compares_quotes_after_normalisation_and_shows_the_raw_quote():
    raw = "*Canopy cover* is always acre\u2011weighted"
    recorded = dict(ACC, quote="Canopy cover is always acre\u2011weighted")
    res = replay(cite(raw), [recorded])
    assert res.segments[0].quote == raw


def test_replay_decisions_are_consumed_in_order_including_malformed():
    text = (
        "a\n<commons-citation>\n> x\ny\n> z\n</commons-citation>\n"
        + cite()
        + "\n"
        + cite("second quote that is long")
    )
    decisions = [
        {"quote": None, "status": "malformed"},
        ACC,
        {"quote": "second quote that is long", "status": "rejected"},
    ]
    res = replay(text, decisions)
    assert [type(s).__name__ for s in res.segments] == [
        "TextSegment",
        "AsideSegment",
        "TextSegment",
    ]


def test_discarded_elements_consume_no_recorded_decision():
    text = "<commons-citation>\n> a\n<shiny-aside>\n</commons-citation>\n" + cite()
    res = replay(text, [ACC])
    assert any(isinstance(s, AsideSegment) for s in res.segments)


def test_attribute_values_are_escaped_ampersand_first():
    assert (
        aside_markup('R&D "docs"', None, "b")
        == '<shiny-aside display="compact" label="R&amp;D &quot;docs&quot;">b</shiny-aside>'
    )


# -- properties ----------------------------------------------------------------------------

PIECES = [
    "<commons-citation>",
    "</commons-citation>",
    "<shiny-aside",
    ' label="x">',
    "</shiny-aside>",
    "\n",
    "\n\n",
    "> ",
    QUOTE,
    "reason text",
    " ",
    "<",
    ">",
    "x",
    "<COMMONS-CITATION>",
    "<shiny-aside>",
    "</SHINY-ASIDE>",
    "<commons-cit",
    "a fabricated quote",
    "*",
    "`",
    "\u2014",
]

texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def cut(text: str, rnd: random.Random) -> list[str]:
    chunks, i = [], 0
    while i < len(text):
        j = i + rnd.randint(1, 7)
        chunks.append(text[i:j])
        i = j
    return chunks


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(0, 2**32))
def test_live_output_is_chunk_invariant(text, seed):
    whole = live(text)
    chunked = scan(text, VerifyResolver(CORPUS), chunks=cut(text, random.Random(seed)))
    assert chunked == whole
    single = scan(text, VerifyResolver(CORPUS), chunks=list(text))
    assert single == whole


@settings(max_examples=200, deadline=None)
@given(texts, st.integers(0, 2**32))
def test_replay_output_is_chunk_invariant(text, seed):
    decisions = [ACC, {"quote": "x", "status": "rejected"}, ACC, ACC]
    whole = replay(text, decisions)
    chunked = scan(text, RecordedResolver(decisions), chunks=cut(text, random.Random(seed)))
    assert chunked == whole


@settings(max_examples=300, deadline=None)
@given(texts)
def test_no_reserved_markup_survives_projection(text):
    for result in (live(text), replay(text, [ACC, ACC, ACC])):
        for seg in result.segments:
            pieces = [seg.text] if isinstance(seg, TextSegment) else [seg.reason, seg.quote]
            for piece in pieces:
                low = piece.lower()
                # No closing tag survives, so no citation or aside element survives whole.
                assert "</commons-citation>" not in low
                assert "</shiny-aside>" not in low
        # On the reviewer's page model text is escaped: the only live markup left is the
        # server's asides, one per accepted citation.
        page = segments_markup(result.segments, PAGE)
        asides = sum(isinstance(s, AsideSegment) for s in result.segments)
        assert page.lower().count("<shiny-aside") == asides
        assert "<commons-citation" not in page.lower()


def test_dropping_a_stray_tag_never_makes_a_live_aside_on_the_page():
    # Dropping the stray close splices `<shiny-aside` and ` label=...>` together in the
    # raw projection; on the reviewer's page that text is escaped and stays text.
    res = live('<shiny-aside</commons-citation> label="x">')
    assert segments_markup(res.segments, PAGE) == '&lt;shiny-aside label="x"&gt;'


def test_a_run_of_angle_brackets_is_text_and_only_its_last_can_open_a_tag():
    run = "<" * 50_000
    assert replay(f"a {run} b", []).segments == (TextSegment(f"a {run} b"),)
    # the last "<" still opens a model-written aside, which never shows
    dropped = replay(f"x {run}<shiny-aside>fake pill</shiny-aside> y", [])
    assert dropped.segments == (TextSegment(f"x {run} y"),)
    # a citation opens a line only: after a run of "<" it is text
    assert replay(f"{run}{cite()}", [ACC]).decisions == ()
