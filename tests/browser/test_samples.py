"""QA by sample, and where reviewers disagree (issue #36), with two signed-in reviewers
behind a trusted proxy (each browser its own identity header)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect
from shiny.playwright import controller

from tests.browser.conftest import send_input


def reviewer(browser, name: str):
    claim = json.dumps({"user": name, "groups": []})
    return browser.new_context(extra_http_headers={"Shiny-Server-Credentials": claim}).new_page()


def quality_tab(page) -> None:
    controller.NavsetUnderline(page, "main_tabs").set("quality")


def looks_right(page) -> None:
    """Mark the open answer (the one the address names) looks right."""
    expect(page).to_have_url(re.compile(r"exchange=\d+"))
    ex = re.search(r"exchange=(\d+)", page.url).group(1)
    page.locator(f"#ex-{ex} .tr-answer-mark[data-mark='looks_right']").click()


def test_a_sample_is_worked_to_the_end_by_two_reviewers(browser, behind_a_proxy):
    ann, bo = reviewer(browser, "ann"), reviewer(browser, "bo")
    ann.goto(behind_a_proxy.url + "?view=flagged")
    expect(ann.locator(".tr-list-summary")).to_be_visible()
    quality_tab(ann)
    ann.locator("#samples-size").fill("2")
    ann.locator("#samples-draw").click()
    bar = ann.locator(".tr-sample-bar")
    expect(bar).to_contain_text("0 of 2 reviewed")  # the first answer opened
    expect(bar).to_contain_text("this answer is in it")
    looks_right(ann)
    expect(bar).to_contain_text("1 of 2 reviewed")
    # the other reviewer works the same sample: it is in the review log, not a session
    bo.goto(behind_a_proxy.url + "?view=flagged")
    expect(bo.locator(".tr-list-summary")).to_be_visible()
    quality_tab(bo)
    listed = bo.locator(".tr-samples li").first
    expect(listed).to_contain_text("1 of 2 reviewed")
    listed.locator("button").click()
    bo_bar = bo.locator(".tr-sample-bar")
    expect(bo_bar).to_contain_text("this answer is in it")
    looks_right(bo)
    expect(bo_bar).to_contain_text("2 of 2 reviewed")
    expect(bar).to_contain_text("2 of 2 reviewed")  # the first reviewer sees it too
    bo.locator(".tr-sample-bar button").click()
    expect(bo.locator(".shiny-notification")).to_contain_text("Every answer of this sample")


def test_a_disagreement_appears_after_opposite_verdicts_and_a_lead_settles_it(
    browser, behind_a_proxy
):
    ann, bo, lea = reviewer(browser, "ann"), reviewer(browser, "bo"), reviewer(browser, "lea")
    for page, verdict in ((ann, "correct"), (bo, "false_positive")):
        page.goto(behind_a_proxy.url + "?conversation=scene-rules&exchange=1")
        rule = page.locator("#ex-1 .tr-rule[data-rule='no-banned-phrases']")
        rule.locator(f".tr-verdict-btn[data-verdict='{verdict}']").click()
        expect(rule.locator(".tr-verdict-state")).to_be_visible()
    quality_tab(ann)
    dispute = ann.locator(".tr-dispute[data-conversation='scene-rules']")
    expect(dispute).to_contain_text("ann")
    expect(dispute).to_contain_text("bo")
    agreement = ann.locator(".tr-quality tr[data-rule='no-banned-phrases']")
    expect(agreement).to_contain_text(re.compile(r"0% · κ"))
    # a party to the dispute, not a lead: no button, and a crafted message is refused
    expect(dispute.get_by_role("button")).to_have_count(0)
    expect(ann.locator(".tr-disputes")).to_contain_text("Settling is for leads")
    settle = {"conversation": "scene-rules", "exchange": 1, "rule": "no-banned-phrases"}
    send_input(ann, "samples-settle", {**settle, "verdict": "correct"}, event=True)
    expect(ann.locator(".shiny-notification")).to_contain_text("settling is for leads")
    expect(dispute).to_be_visible()
    lea.goto(behind_a_proxy.url + "?view=flagged")
    quality_tab(lea)
    lea.locator(".tr-dispute[data-conversation='scene-rules']").get_by_role(
        "button", name="Settle: correct flag"
    ).click()
    expect(lea.locator(".tr-dispute")).to_have_count(0)
    expect(ann.locator(".tr-disputes")).to_contain_text("No flag has reviewers who disagree")
    events = [json.loads(ln) for ln in behind_a_proxy.review_log.read_text().splitlines()]
    settled = [e for e in events if e.get("settles")]
    assert [(e["author"], e["identity"], e["verdict"]) for e in settled] == [
        ("lea", "authenticated", "correct")
    ]


def test_a_typed_name_never_settles_even_a_leads(browser, behind_a_proxy):
    """Behind the proxy without its header, a reviewer types a name: "lea" typed is
    declared, and a declared name never settles."""
    page = browser.new_context().new_page()
    page.goto(behind_a_proxy.url + "?view=flagged")
    send_input(page, "reviewer_name", "lea")
    settle = {"conversation": "scene-rules", "exchange": 1, "rule": "no-banned-phrases"}
    send_input(page, "samples-settle", {**settle, "verdict": "false_positive"}, event=True)
    expect(page.locator(".shiny-notification")).to_contain_text("settling is for leads")
    log = behind_a_proxy.review_log  # none yet when this test runs first on its app
    events = [json.loads(ln) for ln in (log.read_text() if log.exists() else "").splitlines()]
    assert not [e for e in events if e.get("settles") and e["verdict"] == "false_positive"]


@pytest.mark.parametrize(
    ("size", "percent"), [("20", "1e308"), ("1e308", "null"), ("-5", "-1"), ("1e400", "null")]
)
def test_a_crafted_sample_size_is_clamped_and_the_session_lives(browser, behind_a_proxy, size,
                                                                 percent):  # fmt: skip
    page = reviewer(browser, "cy")
    page.goto(behind_a_proxy.url + "?view=flagged")
    expect(page.locator(".tr-list-summary")).to_be_visible()
    quality_tab(page)
    # JavaScript literals: 1e400 is Infinity there, and Shiny sends it as null
    page.evaluate(
        f"() => {{ Shiny.setInputValue('samples-size', {size});"
        f" Shiny.setInputValue('samples-percent', {percent}); }}"
    )
    page.locator("#samples-draw").click()
    bar = page.locator(".tr-sample-bar")
    expect(bar).to_contain_text(re.compile(r"of \d+ reviewed"))
    expect(page.locator("#shiny-disconnected-overlay")).to_have_count(0)
