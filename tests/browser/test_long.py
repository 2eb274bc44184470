"""A conversation too long to draw at once, and an answer too big to draw whole (issue #34
§8): drawn a page of answers at a time, and a capped text with the rest on request."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import RunningApp, send_input, start_app
from tests.fixtures import A, Q, Recorder
from trajectory_review.app.transcript_html import PAGE_EXCHANGES
from trajectory_review.replay.render import SHOWN_CHARS

TURNS = 3 * PAGE_EXCHANGES
BIG = SHOWN_CHARS + 50_000
DOCS, DOC_WORDS = 6, 30_000  # six documents of 150,000 characters: 900,000 in one answer


@pytest.fixture(scope="module")
def long_app(tmp_path_factory) -> Iterator[RunningApp]:
    root: Path = tmp_path_factory.mktemp("long")
    r = Recorder()
    history = []
    for i in range(1, TURNS + 1):
        history += [Q(f"Question number {i}?"), A(f"Answer number {i}, in plain words here.")]
    r.turn("long", history, tag="A")
    tail = "THE-LAST-WORDS"
    r.turn("big", [Q("Tell me everything."), A("word " * (BIG // 5) + tail)], tag="C")
    # an answer whose reading and judging keeps the server busy for a second or more
    r.turn("heavy", [Q("And the details?"), A("Canopy cover is 61% in stand S-12. " * 400_000)])
    docs = "".join(
        f'<artifact id="doc-{i}" title="Document {i}">---\ntitle: Document {i}\n---\n'
        f"{body}END-OF-DOC-{i}</artifact>\n"
        for i, body in enumerate(["cell " * DOC_WORDS] * DOCS)
    )
    r.turn("documents", [Q("Write the reports."), A("Here they are.\n" + docs + "Done.")])
    (root / "traces").mkdir()
    r.write(root / "traces" / "t.jsonl")
    app = start_app(root / "traces", root / "reviews.jsonl", log=root / "server.log")
    yield app
    app.stop()


def shown(page) -> str:
    return page.locator(".tr-conversation").get_attribute("data-shown") or ""


def test_a_long_conversation_opens_at_its_newest_page_and_earlier_answers_come_on_demand(
    page, long_app
):
    page.goto(long_app.url + "?conversation=long")
    conv = page.locator(".tr-conversation[data-conversation='long']")
    expect(conv).to_have_attribute("data-shown", f"{TURNS - PAGE_EXCHANGES + 1}-{TURNS}")
    expect(page.locator(".tr-exchange")).to_have_count(PAGE_EXCHANGES)
    expect(conv).to_have_attribute("data-exchanges", str(TURNS))
    earlier = page.locator(".tr-more-earlier")
    expect(earlier).to_have_text(f"Earlier answers ({TURNS - PAGE_EXCHANGES} more)")
    expect(page.locator(".tr-more-later")).to_have_count(0)
    earlier.click()
    expect(conv).to_have_attribute("data-shown", f"{TURNS - 2 * PAGE_EXCHANGES + 1}-{TURNS}")
    expect(page.locator(".tr-exchange")).to_have_count(2 * PAGE_EXCHANGES)


def test_a_linked_answer_opens_its_page_and_n_p_step_across_pages(page, long_app):
    # Once, in a clean clone's run, the address cycled between earlier answers after an n
    # on a busy server; it never came back. On a failure, the socket's `nav` inputs and
    # `tr-url` answers say which side repeated itself.
    frames: list[str] = []

    def record(ws) -> None:
        def keep(arrow: str, payload: str | bytes) -> None:
            text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
            if "navigation-nav" in text or "tr-url" in text:
                frames.append(f"{arrow} {text[:300]}")

        ws.on("framesent", lambda payload: keep(">", payload))
        ws.on("framereceived", lambda payload: keep("<", payload))

    page.on("websocket", record)
    page.goto(long_app.url + "?conversation=long&exchange=3")
    expect(page.locator("#ex-3")).to_be_visible()
    assert shown(page) == f"1-{PAGE_EXCHANGES}"
    expect(page.locator(".tr-more-later")).to_be_visible()
    page.locator("body").press("p")
    expect(page).to_have_url(re.compile(r"exchange=2\b"))
    for n in range(3, PAGE_EXCHANGES + 3):  # each step once the last is in the address
        page.locator("body").press("n")
        try:
            expect(page).to_have_url(re.compile(rf"exchange={n}\b"))
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nnav and tr-url frames:\n" + "\n".join(frames)) from None
    expect(page.locator(f"#ex-{PAGE_EXCHANGES + 2}")).to_be_visible()
    lo, hi = (int(x) for x in shown(page).split("-"))
    assert lo <= PAGE_EXCHANGES + 2 <= hi


def test_an_answer_too_big_to_draw_shows_its_start_and_all_of_it_as_text_on_request(page, long_app):
    page.goto(long_app.url + "?conversation=big")
    answer = page.locator("#ex-1 .tr-assistant")
    button = answer.locator(".tr-show-all-text")
    expect(button).to_contain_text(f"Show all ({BIG // 5 * 5 + len('THE-LAST-WORDS'):,}")
    expect(answer).not_to_contain_text("THE-LAST-WORDS")
    assert "THE-LAST-WORDS" not in page.content()  # not in the page whole, raw view neither
    button.click()
    full = page.locator(".modal .tr-full-text")
    expect(full).to_contain_text("THE-LAST-WORDS")


def test_documents_count_toward_what_one_answer_puts_on_the_page(page, long_app):
    page.goto(long_app.url + "?conversation=documents")
    answer = page.locator("#ex-1 .tr-assistant")
    expect(answer.locator(".tr-artifact")).to_have_count(1)  # 150,000 of 200,000: one fits
    assert "END-OF-DOC-1" not in page.content()
    button = answer.locator(".tr-show-all-text")
    expect(button).to_contain_text("Show all (900,")  # and a little frontmatter
    button.click()
    full = page.locator(".modal .tr-full-text")
    expect(full).to_contain_text(f"[document doc-{DOCS - 1}: Document {DOCS - 1}]")
    expect(full).to_contain_text(f"END-OF-DOC-{DOCS - 1}")


def test_a_page_closed_while_another_session_is_served_leaves_no_traceback(browser, long_app):
    # Shiny's poll printed a CancelledError traceback for a session that ended while its
    # timer waited for the reactive lock behind another session's long render: on plain
    # navigation, with a colleague opening a long answer.
    log = long_app.traces.parent / "server.log"
    busy, leaving = browser.new_page(), browser.new_page()
    for p in (leaving, busy):
        p.goto(long_app.url + "?view=answers")
        expect(p.locator(".tr-list-summary")).to_be_visible()
    opened = log.stat().st_size
    nav = {"conversation": "heavy", "exchange": None, "history": "push"}
    send_input(busy, "navigation-nav", nav, event=True)
    expect(busy.locator(".tr-conversation[data-conversation='heavy']")).to_have_count(0)
    leaving.wait_for_timeout(1500)  # its timers fire while the other render holds the lock
    leaving.close()
    expect(busy.locator(".tr-conversation[data-conversation='heavy']")).to_be_visible(
        timeout=60_000
    )
    busy.close()
    said = log.read_bytes()[opened:].decode("utf-8", "replace")
    assert "Traceback" not in said and "CancelledError" not in said, said[-2000:]
