"""The keyboard decided on the server (issue #49): one table renders the help and names
the keys the page sends, keys act on the selection as the server has it when they arrive
(no buffer of early keys in the page), and a note being written survives the transcript
being drawn again."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import add_note, start_app
from trajectory_review.app.keys import JOBS, KEYS, SENT


@pytest.fixture
def fresh_app(traces_dir, tmp_path):
    app = start_app(traces_dir, tmp_path / "reviews.jsonl")
    yield app
    app.stop()


def verdicts(app) -> list[dict]:
    text = app.review_log.read_text() if app.review_log.exists() else ""
    return [e for e in map(json.loads, text.splitlines()) if e["type"] == "verdict"]


def test_the_help_and_the_keys_the_page_sends_come_from_one_table(open_app):
    assert {k.job for k in KEYS if k.job} <= set(JOBS)
    page = open_app()
    assert page.locator(".tr-app").get_attribute("data-keys") == SENT
    assert "/" not in SENT and "m" not in SENT  # focus moves stay in the page
    page.locator(".tr-help-btn").click()  # the header's button asks the server, as ? does
    help_ = page.locator(".tr-help")
    for key in KEYS:
        expect(help_).to_contain_text(key.says)
    page.keyboard.press("Escape")
    expect(help_).to_be_hidden()


def test_a_verdict_key_right_behind_a_move_judges_the_answer_moved_to(page: Page, fresh_app):
    page.goto(fresh_app.url + "?view=flagged&q=scene-")
    rows = page.locator(".tr-row")
    expect(rows.first).to_have_class(r"tr-row tr-row-selected")
    second = rows.nth(1)
    cid, ex = second.get_attribute("data-conversation"), second.get_attribute("data-exchange")
    # pressed together: the server takes them in order, the move before the verdict
    page.keyboard.press("]")
    page.keyboard.press("x")
    expect(second).to_have_class(r"tr-row tr-row-selected")
    for _ in range(100):
        if verdicts(fresh_app):
            break
        page.wait_for_timeout(100)
    (only,) = verdicts(fresh_app)
    assert (only["conversation_id"], str(only["exchange"])) == (cid, ex)
    assert only["verdict"] == "false_positive"


def test_a_verdict_note_being_written_survives_the_transcript_drawn_again(
    page: Page, fresh_app, browser
):
    url = fresh_app.url + "?conversation=scene-rules&exchange=1&view=flagged&q=scene-"
    page.goto(url)
    page.wait_for_selector(".tr-rule", timeout=60_000)
    page.locator("body").press("m")
    box = page.locator(".tr-verdict-note:focus")
    expect(box).to_have_count(1)
    page.keyboard.type("half a ")
    # a colleague's note on this conversation draws its transcript again
    other = browser.new_page()
    other.goto(url)
    other.wait_for_selector(".tr-rule", timeout=60_000)
    add_note(other, "a colleague was here")
    expect(page.locator(".tr-inline-notes")).to_contain_text("a colleague was here")
    page.keyboard.type("thought")  # the focus and the text are where they were
    expect(page.locator(".tr-verdict-note:focus")).to_have_value("half a thought")
    page.keyboard.press("Escape")
    page.keyboard.press("c")
    for _ in range(100):
        if verdicts(fresh_app):
            break
        page.wait_for_timeout(100)
    assert [v["text"] for v in verdicts(fresh_app)] == ["half a thought"]
    other.close()


def test_the_review_menu_moves_only_when_a_reviewer_chooses(page: Page, fresh_app):
    # the menu says what is reviewed; a choice in it opens that answer, and the queue
    # moving on (x) leaves it where the server put it: a menu drawn anew once reported a
    # stale value back and flipped the selection between two answers without end
    page.goto(fresh_app.url + "?conversation=scene-multi&exchange=1")
    menu = page.locator("#review-scope")
    expect(menu).to_have_value("1")
    menu.select_option("2")
    expect(page).to_have_url(re.compile(r"exchange=2"))
    expect(page.locator("#ex-2")).to_have_class(re.compile("tr-current"))
    page.goto(fresh_app.url + "?view=flagged&q=scene-")
    rows = page.locator(".tr-row")
    expect(rows.first).to_have_class(re.compile("tr-row-selected"))
    page.keyboard.press("]")
    page.keyboard.press("x")
    for _ in range(100):  # the verdict written; the queue then moves on
        if verdicts(fresh_app):
            break
        page.wait_for_timeout(100)
    expect(page.locator(".recalculating:visible")).to_have_count(0)
    page.wait_for_timeout(500)
    settled_at = page.url
    page.wait_for_timeout(1500)  # a flip shows within a round trip or two
    assert page.url == settled_at
    assert f"exchange={page.locator('#review-scope').input_value()}" in settled_at


def test_choosing_the_answers_view_by_arrow_keys_keeps_the_focus_on_the_views(open_app):
    # The view opens its first answer, of the conversation already open: the focus went
    # with it into the transcript, and the next arrow, meant for the views, was lost.
    page = open_app()
    expect(page.locator(".tr-conversation")).to_be_visible()
    views = page.locator("input[name='list-view']")
    views.locator("xpath=self::*[@value='conversations']").focus()
    page.keyboard.press("ArrowRight")
    expect(page).to_have_url(re.compile("view=answers"))
    expect(page.locator(".tr-exchange.tr-current")).to_be_visible()  # its answer opened
    page.wait_for_timeout(300)  # the answer drawn, and any focus move made
    assert page.evaluate("() => document.activeElement.name") == "list-view"
    page.keyboard.press("ArrowRight")
    expect(views.locator("xpath=self::*[@value='flagged']")).to_be_checked()
