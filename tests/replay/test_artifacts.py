"""Artifact documents in an answer (today's commons): the one scanner reads them as
reserved elements, live and in replay, the same however the stream is cut (issue #35
§3). The rules are commons' (line-anchored, case-insensitive, quoted attributes, a slug
id, the title defaulting to it, caps; anything malformed, unclosed or oversized
swallowed; a stray close tag dropped; a citation inside a body is body)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_review.replay.citations import (
    MAX_ARTIFACT_BODY,
    MAX_ARTIFACT_HEADER,
    ArtifactSegment,
    TextSegment,
    scan,
)
from trajectory_review.replay.project import segments_markup
from trajectory_review.replay.render import PAGE
from trajectory_review.replay.resolvers import RecordedResolver

ACC = {"quote": "Canopy cover is always acre-weighted.", "status": "accepted",
       "label": "Guide", "kind": "prose"}  # fmt: skip


def replay(text: str, decisions=(), chunks=None):
    return scan(text, RecordedResolver(tuple(decisions)), chunks)


def projected(text: str) -> str:
    return segments_markup(replay(text).segments)


def artifacts(text: str) -> list[tuple[str, str, str]]:
    return [(s.id, s.title, s.body) for s in replay(text).segments
            if isinstance(s, ArtifactSegment)]  # fmt: skip


@pytest.mark.parametrize("name", ["artifact", "commons-artifact"])
def test_a_document_leaves_its_chip_where_it_was_and_keeps_its_body(name):
    text = f'Here.\n\n<{name} id="q3-report" title="Q3 report">\n# Q3\n\nBody.\n</{name}>\n\nDone.'
    assert projected(text) == "Here.\n\n[artifact:q3-report]\n\nDone."
    assert artifacts(text) == [("q3-report", "Q3 report", "\n# Q3\n\nBody.\n")]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('<artifact id="q3">b</artifact>', [("q3", "q3", "b")]),  # the title is the id
        ("<artifact kind='r' title='Q3 review' id='q3'>b</artifact>", [("q3", "Q3 review", "b")]),
        ('<ARTIFACT ID="a">b</Artifact>', [("a", "a", "b")]),
        ('<artifact id="a" title="x > y">b</artifact>', [("a", "x > y", "b")]),
        ('<artifact id="a">1</artifact>\n<artifact id="b">2</artifact>',
         [("a", "a", "1"), ("b", "b", "2")]),
        ('<artifact id="a">\n<commons-citation>\n> q\n</commons-citation>\n</artifact>',
         [("a", "a", "\n<commons-citation>\n> q\n</commons-citation>\n")]),
    ],
)  # fmt: skip
def test_well_formed_documents_are_read(text, found):
    assert artifacts(text) == found


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('Use <artifact id="a"> mid-line.', 'Use <artifact id="a"> mid-line.'),  # prose
        ("Text </artifact> and </Commons-Artifact> more.", "Text  and  more."),  # stray
        ('<commons-artifact-link a="1">A</commons-artifact-link>',
         '<commons-artifact-link a="1">A</commons-artifact-link>'),  # another element
        ("Before.\n<artifact>body</artifact>\nAfter.", "Before.\n\nAfter."),  # no id
        ('<artifact id="Sales Report">body</artifact>', ""),  # not a slug
        ("<artifact id=a>body</artifact>", ""),  # unquoted
        ('<artifact id="a"\ntitle="T">body</artifact>\nAfter.', "\nAfter."),  # two lines
        ('Start.\n<artifact id="a">never closed', "Start.\n"),
        ('<artifact id="a" title="' + "t" * MAX_ARTIFACT_HEADER + '">b</artifact>\nAfter.',
         "\nAfter."),  # a header past its cap
        ('<artifact id="a">' + "x" * (MAX_ARTIFACT_BODY + 1) + "</artifact>\nAfter.", "\nAfter."),
    ],
)  # fmt: skip
def test_malformed_unclosed_or_oversized_documents_are_swallowed(text, shown):
    assert projected(text) == shown
    assert artifacts(text) == []


def test_a_body_at_its_cap_is_read_and_a_citation_around_a_document_is_unaffected():
    body = "x" * MAX_ARTIFACT_BODY
    assert artifacts(f'<artifact id="a">{body}</artifact>') == [("a", "a", body)]
    text = (
        'Intro.\n<artifact id="d">doc</artifact>\n'
        "<commons-citation>\n\nWhy.\n\n> Canopy cover is always acre-weighted.\n\n"
        "</commons-citation>"
    )
    res = replay(text, [ACC])
    assert [type(s).__name__ for s in res.segments] == [
        "TextSegment", "ArtifactSegment", "TextSegment", "AsideSegment"
    ]  # fmt: skip
    assert len(res.decisions) == 1


PIECES = [
    '<artifact id="a" title="T">', "<commons-artifact id='b'>", "</artifact>",
    "</commons-artifact>", "<artifact", "<commons-artifact", ' id="c">', "<ARTIFACT id=\"x\">",
    "<commons-artifact-link>", "\n", "body", " ", "<", ">", '"', "<commons-citation>",
    "</commons-citation>", "> Canopy cover is always acre-weighted.", "<shiny-aside>",
    "</shiny-aside>",
]  # fmt: skip
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(0, 2**32))
def test_documents_read_the_same_however_the_stream_is_cut(text, seed):
    whole = replay(text, [ACC, ACC])
    rnd = random.Random(seed)
    cuts: list[str] = []
    i = 0
    while i < len(text):
        j = i + rnd.randint(1, 6)
        cuts.append(text[i:j])
        i = j
    assert replay(text, [ACC, ACC], cuts) == whole
    assert replay(text, [ACC, ACC], list(text)) == whole


@settings(max_examples=300, deadline=None)
@given(texts)
def test_no_document_markup_survives_as_text_and_the_page_holds_none(text):
    res = replay(text, [ACC, ACC])
    for seg in res.segments:
        if isinstance(seg, TextSegment):
            assert "</artifact>" not in seg.text.lower()
            assert "</commons-artifact>" not in seg.text.lower()
    page = segments_markup(res.segments, PAGE).lower()
    assert "<artifact" not in page and "<commons-artifact" not in page
