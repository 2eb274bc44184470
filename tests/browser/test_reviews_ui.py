"""Notes and flags: saved, restored after reload and restart, never lost between sessions."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.conftest import add_note, start_app


def test_note_and_flag_survive_reload(open_app):
    page = open_app("?conversation=scene-multi&exchange=2")
    add_note(page, "unit looks wrong here")
    page.locator("#ex-2 .tr-btn-flag").click()
    expect(page.locator("#ex-2 .tr-btn-flag")).to_have_text(re.compile("Flagged"))
    page.reload()
    page.wait_for_selector("#ex-2")
    expect(page.locator("#ex-2 .tr-btn-flag")).to_have_text(re.compile("Flagged"))
    expect(page.locator(".tr-notes")).to_contain_text("unit looks wrong here")
    expect(page.locator("#ex-2 .tr-inline-notes")).to_contain_text("unit looks wrong here")
    # the list marks the flag, and the review filter finds it
    page.goto(page.url.split("?")[0] + "?review=flagged")
    expect(page.locator(".tr-row[data-conversation='scene-multi'] .tr-mark-flag")).to_have_count(1)


def test_f_flags_the_current_answer(open_app):
    page = open_app("?conversation=scene-cited&exchange=1")
    page.locator("body").press("f")
    expect(page.locator("#ex-1 .tr-btn-flag")).to_have_text(re.compile("Flagged"))
    page.locator("body").press("f")
    expect(page.locator("#ex-1 .tr-btn-flag")).to_have_text(re.compile("^\\s*Flag$"))


def test_two_sessions_adding_notes_at_once_lose_nothing(browser, app_server):
    pages = [browser.new_context().new_page() for _ in range(2)]
    for p in pages:
        p.goto(app_server.url + "?conversation=scene-hostile")
        p.wait_for_selector(".tr-conversation")
    for i in range(5):
        for k, p in enumerate(pages):
            p.locator("#review-note").fill(f"session {k} note {i}")
            p.locator("#review-add_note").click()
    for p in pages:
        expect(p.locator(".tr-notes")).to_contain_text("session 1 note 4")
    pages[0].reload()
    pages[0].wait_for_selector(".tr-notes")
    for k in range(2):
        for i in range(5):
            expect(pages[0].locator(".tr-notes")).to_contain_text(f"session {k} note {i}")


def test_notes_survive_an_app_restart(page, traces_dir, tmp_path):
    log = tmp_path / "reviews.jsonl"
    app = start_app(traces_dir, log)
    try:
        page.goto(app.url + "?conversation=scene-cited")
        page.wait_for_selector(".tr-conversation")
        add_note(page, "checked against the guide")
    finally:
        app.stop()
    app = start_app(traces_dir, log, port=app.port)
    try:
        page.goto(app.url + "?conversation=scene-cited")
        page.wait_for_selector(".tr-conversation")
        expect(page.locator(".tr-notes")).to_contain_text("checked against the guide")
    finally:
        app.stop()


def test_review_events_download_as_csv(open_app):
    page = open_app("?conversation=scene-multi")
    add_note(page, "for the csv")
    with page.expect_download() as dl:
        page.locator("#review-download").click()
    text = open(dl.value.path()).read()
    assert text.startswith("ts,author,identity,type,conversation_id") and "for the csv" in text


def test_a_colleagues_note_never_re_renders_my_transcript(browser, app_server):
    mine, theirs = browser.new_page(), browser.new_page()
    mine.goto(app_server.url + "?conversation=scene-rules&exchange=1")
    theirs.goto(app_server.url + "?conversation=scene-label")
    for p in (mine, theirs):
        p.wait_for_selector(".tr-conversation", timeout=30_000)
    card = mine.locator("#ex-1 .tr-tool-card").first
    card.locator("summary").first.click()
    expect(card).to_have_attribute("open", "")
    half = mine.locator("#ex-1 .tr-rule .tr-verdict-note").first
    half.fill("half a thought about")
    # the colleague notes another conversation of my list: my session has read it once
    # that row carries its note mark (no sleep standing in for the log's poll)
    elsewhere = mine.locator(".tr-row[data-conversation='scene-label'] .tr-mark-note")
    expect(elsewhere).to_have_count(0)
    add_note(theirs, "a colleague's note elsewhere")
    expect(elsewhere).to_have_count(1)
    # my transcript was left alone: the card is open, the half-typed note still there
    expect(card).to_have_attribute("open", "")
    expect(half).to_have_value("half a thought about")
