"""QA: the flagged queue, verdicts on flags, and the rule quality panel."""

from __future__ import annotations

import re

from playwright.sync_api import expect
from shiny.playwright import controller

from tests.browser.conftest import send_input


def test_flagged_view_lists_answers_the_linter_would_withhold(open_app):
    page = open_app("?view=flagged&q=scene-rules")
    rows = page.locator(".tr-row")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".tr-rule-gate")).to_have_text("no-banned-phrases")
    box = page.locator("#ex-1 .tr-rules")
    expect(box).to_contain_text("praise opener")
    expect(box.locator("mark")).to_have_text("Great question")


def test_metric_only_failures_are_listed_separately(open_app):
    page = open_app("?view=flagged&flags=metric&q=scene-rules", wait_transcript=False)
    expect(page.locator(".tr-row")).to_have_count(0)
    controller.InputRadioButtons(page, "list-flag_kind").expect_selected("metric")


def test_false_positive_verdict_survives_reload_and_is_counted(open_app):
    page = open_app("?conversation=scene-rules&exchange=1")
    rule = page.locator("#ex-1 .tr-rule[data-rule='no-banned-phrases']")
    rule.locator(".tr-verdict-note").fill("reporter voice, not praise")
    rule.locator(".tr-verdict-btn[data-verdict='false_positive']").click()
    expect(
        page.locator("#ex-1 .tr-rule[data-rule='no-banned-phrases'] .tr-verdict-state")
    ).to_contain_text("false positive")
    page.reload()
    page.wait_for_selector("#ex-1 .tr-rules")
    expect(
        page.locator("#ex-1 .tr-rule[data-rule='no-banned-phrases'] .tr-verdict-state")
    ).to_contain_text("reporter voice, not praise")
    controller.NavsetUnderline(page, "main_tabs").set("quality")
    row = page.locator(".tr-quality tr[data-rule='no-banned-phrases']")
    expect(row).to_contain_text(re.compile(r"100% \(1 of 1\)"))
    # a rule nobody reviewed shows no rate at all, never 0%
    expect(page.locator(".tr-quality tr[data-rule='no-hedged-names']")).to_contain_text(
        "no reviews yet"
    )
    expect(page.locator(".tr-notes")).to_contain_text("false positive")


def test_brackets_walk_the_qa_queue_row_by_row(open_app):
    page = open_app("?view=flagged")
    rows = page.locator(".tr-row")
    expect(rows.first).to_be_visible()
    assert rows.count() >= 2
    first, second = rows.nth(0), rows.nth(1)
    # the queue opens on its first answer
    expect(first).to_have_class(re.compile("tr-row-selected"))
    page.locator("body").press("]")
    expect(second).to_have_class(re.compile("tr-row-selected"))
    cid, ex = second.get_attribute("data-conversation"), second.get_attribute("data-exchange")
    expect(page).to_have_url(re.compile(rf"conversation={re.escape(cid)}&exchange={ex}"))
    page.locator("body").press("[")
    expect(first).to_have_class(re.compile("tr-row-selected"))


def test_the_list_and_the_reviewed_answers_download_from_the_app(open_app):
    import csv
    import io
    import json

    page = open_app("?conversation=scene-rules&exchange=1")
    rule = page.locator("#ex-1 .tr-rule[data-rule='no-banned-phrases']")
    rule.locator(".tr-verdict-note").fill("praise, for the dataset")
    rule.locator(".tr-verdict-btn[data-verdict='correct']").click()
    expect(rule.locator(".tr-verdict-state")).to_contain_text("correct flag")
    with page.expect_download() as got:
        page.locator("#downloads-reviewed").click()
    lines = [json.loads(ln) for ln in open(got.value.path(), encoding="utf-8")]
    mine = [r for r in lines if r["conversation_id"] == "scene-rules"]
    assert mine and mine[0]["schema"] == "trajectory-review/reviewed@1"
    verdict = [v for v in mine[0]["review"]["verdicts"] if v["note"] == "praise, for the dataset"]
    assert verdict and verdict[0]["rule"] == "no-banned-phrases"
    # the current list, every page of it, under its filters
    page = open_app("?view=answers&tag=C", wait_transcript=False)
    expect(page.locator(".tr-row").first).to_be_visible()
    with page.expect_download() as got:
        page.locator("#downloads-list_csv").click()
    rows = list(csv.DictReader(io.StringIO(open(got.value.path(), encoding="utf-8").read())))
    assert rows and {r["provenance_tag"] for r in rows} == {"C"}
    summary = page.locator(".tr-list-summary").inner_text()
    assert summary.strip().startswith(f"{len(rows)} answer")


def test_the_review_pane_folds_away_for_the_rule_quality_table(open_app):
    page = open_app("?conversation=scene-rules&exchange=1")
    pane = controller.Sidebar(page, "right")
    pane.expect_open(True)
    controller.NavsetUnderline(page, "main_tabs").set("quality")
    pane.expect_open(False)
    table = page.locator("table.tr-quality")
    expect(table).to_be_visible()
    box = table.bounding_box()
    assert box is not None and box["x"] + box["width"] <= page.viewport_size["width"]
    expect(page.locator(".tr-quality tr[data-rule='no-hedged-names']")).to_be_visible()
    controller.NavsetUnderline(page, "main_tabs").set("transcript")
    pane.expect_open(True)


def test_the_server_records_only_verdicts_the_open_answer_can_have(open_app, app_server):
    page = open_app("?conversation=scene-rules&exchange=1")
    expect(page.locator("#ex-1 .tr-rule[data-rule='no-banned-phrases']")).to_be_visible()
    crafted = [
        ("queue-verdict", {"exchange": 1, "rule": "no-hedged-names", "verdict": "correct"}),
        ("queue-verdict", {"exchange": 1, "rule": '=HYPERLINK("http://x")', "verdict": "correct"}),
        ("queue-verdict", {"exchange": 999999, "rule": "no-banned-phrases", "verdict": "correct"}),
        ("queue-answer_mark", {"exchange": 999999, "mark": "looks_right"}),
        # a flag the open answer has, sent by a button of another conversation's transcript
        (
            "queue-verdict",
            {
                "exchange": 1,
                "rule": "no-banned-phrases",
                "verdict": "correct",
                "conversation": "another-conversation",
            },
        ),
    ]
    for _, value in crafted:
        value.setdefault("conversation", "scene-rules")
    log = app_server.review_log
    before = log.read_text() if log.exists() else ""
    notes = page.locator(".shiny-notification").filter(has_text="Not saved")
    for n, (name, value) in enumerate(crafted, start=1):
        send_input(page, name, value, event=True)
        expect(notes).to_have_count(n)  # each is refused, in order, with a line saying so
    events = (log.read_text() if log.exists() else "")[len(before) :]
    assert events == ""  # nothing of it written


def test_the_queue_opened_from_its_tab_answers_the_keys(open_app, app_server):
    # opened at /, then the Flagged tab clicked: the queue's first answer is open, so
    # ] walks it and x judges its first flag
    page = open_app("")
    expect(page).not_to_have_url(re.compile(r"exchange="))
    page.locator("input[name='list-view'][value='flagged']").check()
    expect(page).to_have_url(re.compile(r"view=flagged.*exchange=\d+|exchange=\d+.*view=flagged"))
    rows = page.locator(".tr-row")
    expect(rows.first).to_have_class(re.compile("tr-row-selected"))
    page.keyboard.press("]")  # the focus still on the tab's radio button, as after a click
    expect(rows.nth(1)).to_have_class(re.compile("tr-row-selected"))
    judged = rows.nth(1)
    cid, ex = judged.get_attribute("data-conversation"), judged.get_attribute("data-exchange")
    before = app_server.review_log.read_text() if app_server.review_log.exists() else ""
    page.keyboard.press("x")
    # the answer is done: the queue moves on to the next one nobody has finished
    was = page.locator(f'.tr-row-selected[data-conversation="{cid}"][data-exchange="{ex}"]')
    expect(was).to_have_count(0)
    expect(page.locator(".tr-row-selected")).to_have_count(1)
    after = app_server.review_log.read_text()
    assert after.count('"verdict":"false_positive"') > before.count('"verdict":"false_positive"')
