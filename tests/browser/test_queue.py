"""QA's queue (issue #12): review states, "k of N reviewed", done answers hidden until
asked for, verdicts from the keyboard that move on to the next undone answer, and two
reviewers sharing one queue."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect
from shiny.playwright import controller

from tests.browser.conftest import start_app
from tests.fixtures import until

QUEUE = "?view=flagged&q=scene-"  # the scenes' flagged answers: a queue of a few


@pytest.fixture
def fresh_app(traces_dir, tmp_path):
    """A server with a review log of its own: the queue starts with nothing done."""
    app = start_app(traces_dir, tmp_path / "reviews.jsonl")
    yield app
    app.stop()


def open_queue(page: Page, url: str) -> None:
    page.goto(url + QUEUE)
    page.wait_for_selector(".tr-conversation", timeout=60_000)


def selected(page: Page) -> tuple[str, str]:
    row = page.locator(".tr-row.tr-row-selected")
    expect(row).to_have_count(1)
    return row.get_attribute("data-conversation"), row.get_attribute("data-exchange")


def listed(page: Page) -> list[tuple[str, str]]:
    return [
        (r.get_attribute("data-conversation"), r.get_attribute("data-exchange"))
        for r in page.locator(".tr-row").all()
    ]


def log_events(app) -> list[dict]:
    text = app.review_log.read_text() if app.review_log.exists() else ""
    return [json.loads(line) for line in text.splitlines()]


def test_a_queue_is_walked_start_to_finish_from_the_keyboard(page, fresh_app):
    open_queue(page, fresh_app.url)
    rows = page.locator(".tr-row")
    expect(rows.first).to_be_visible()
    total = rows.count()
    assert total >= 5
    summary = page.locator(".tr-list-summary")
    expect(summary).to_contain_text(f"0 of {total} reviewed")
    seen = []
    for i, key in enumerate(("x", "c", "l") * total):
        if i == total:
            break
        cid, ex = selected(page)
        seen.append((cid, ex))
        expect(page.locator(f"#ex-{ex} .tr-queue-state")).to_have_text("to do")
        page.locator("body").press(key)
        expect(summary).to_contain_text(f"{i + 1} of {total} reviewed")
        # the finished answer leaves the list; the next undone one is open
        expect(rows).to_have_count(max(total - i - 1, 0))
        assert (cid, ex) not in listed(page)
        if i < total - 1:
            expect(page.locator(".tr-row.tr-row-selected")).to_have_count(1)
            assert selected(page) != (cid, ex)
    assert len(set(seen)) == total  # every answer once, none skipped, none twice
    expect(page.locator(".tr-rows")).to_contain_text("Every answer here is reviewed.")
    expect(page.locator(".shiny-notification")).to_contain_text("The queue is done")
    # what was given, as the reviewer's, in the log
    events = [e for e in log_events(fresh_app) if e["type"] in ("verdict", "looks_right")]
    assert len(events) == total
    assert [e.get("verdict") or e["type"] for e in events][:3] == [
        "false_positive",
        "correct",
        "looks_right",
    ]
    # the done answers come back on request, marked, and the link remembers it
    controller.InputSwitch(page, "list-show_done").set(True)
    expect(rows).to_have_count(total)
    expect(page.locator(".tr-row .tr-mark-done")).to_have_count(total)
    expect(page).to_have_url(re.compile(r"done=1"))
    page.locator("body").press("?")
    expect(page.locator(".tr-help")).to_contain_text("looks right")


def test_reopen_puts_an_answer_back_in_the_queue(page, fresh_app):
    page.goto(fresh_app.url + "?conversation=scene-rules&exchange=1&view=flagged&q=scene-")
    page.wait_for_selector("#ex-1 .tr-rules", timeout=60_000)
    state = page.locator("#ex-1 .tr-queue-state")
    expect(state).to_have_text("to do")
    total = page.locator(".tr-row").count()
    page.locator("#ex-1 .tr-answer-mark[data-mark='looks_right']").click()
    expect(page.locator(".tr-list-summary")).to_contain_text(f"1 of {total} reviewed")
    page.goto(fresh_app.url + "?conversation=scene-rules&exchange=1")
    expect(state).to_have_text("looks right")
    page.locator("#ex-1 .tr-answer-mark[data-mark='reopen']").click()
    expect(state).to_have_text("to do")
    assert [e["type"] for e in log_events(fresh_app)] == ["looks_right", "reopen"]


def test_two_reviewers_share_one_queue(browser, fresh_app):
    one, two = browser.new_page(), browser.new_page()
    for p in (one, two):
        open_queue(p, fresh_app.url)
    rows_two = two.locator(".tr-row")
    total = rows_two.count()
    first = selected(two)
    # the first reviewer takes the second answer and finishes it ...
    one.locator("body").press("]")
    expect(one.locator(".tr-row").nth(1)).to_have_class(re.compile("tr-row-selected"))
    theirs = selected(one)
    one.locator("body").press("l")
    # ... the second sees it done within a second, without touching anything
    expect(two.locator(".tr-list-summary")).to_contain_text(f"1 of {total} reviewed", timeout=1_500)
    expect(rows_two).to_have_count(total - 1, timeout=1_500)
    # the first finishes the next one and, at once, the second finishes their own: the
    # second is sent on to an answer nobody has finished, whatever their page showed
    also_theirs = selected(one)
    one.locator("body").press("l")
    # Two pages' keys reach the server in either order: pressed together, the second's
    # was once handled first, sending them on to the answer the first was finishing that
    # instant. So the second presses once the first's finish is in the log, while their
    # page may still list that answer (it learns of it on its next poll).
    saved = fresh_app.review_log
    until(lambda: saved.read_text().count('"looks_right"') >= 2, 10,
          "the first reviewer's finish was not saved")  # fmt: skip
    two.locator("body").press("l")
    expect(two.locator(".tr-list-summary")).to_contain_text(f"3 of {total} reviewed")
    expect(two.locator(".tr-row.tr-row-selected")).to_have_count(1)
    assert selected(two) not in (first, theirs, also_theirs)
