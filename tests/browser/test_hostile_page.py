"""Trace data is never markup: labels, ids, tool and model names, deep links and a broken
review log, in the browser (issue #7). A loopback listener counts every fetch."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import settled, start_app
from tests.browser.scenes import HOSTILE_ID
from trajectory_review.listing.urls import conversation_href

LIVE = ", ".join(f".tr-main {t}" for t in ("iframe", "object", "embed", "form", "link", "style"))


def test_a_recorded_label_never_becomes_live_html(open_app, leak):
    before = len(leak.paths)
    page = open_app("?conversation=scene-label")
    answer = page.locator("#ex-1 .tr-assistant")
    pills = answer.locator(".shiny-aside-pill")
    expect(pills).to_have_count(1)  # the fake pill in the label is text, not a pill
    expect(pills.first).to_have_attribute("aria-label", re.compile("^Aside 1: Weighting guide"))
    settled(page)
    assert page.locator(LIVE).count() == 0
    assert page.evaluate("window.__xss_label") is None
    pills.first.click()
    popover = page.locator(".shiny-aside-popover")
    # the whole label is shown as the text it is
    label = popover.locator(".shiny-aside-popover__label-text")
    expect(label).to_contain_text("<iframe srcdoc=")
    expect(label).to_contain_text("FAKE PILL")
    assert page.locator(LIVE).count() == 0
    settled(page)
    assert [p for p in leak.paths[before:] if "label" in p] == []


def test_ids_tool_names_model_names_and_reasons_stay_text(open_app, leak):
    before = len(leak.paths)
    page = open_app(conversation_href(HOSTILE_ID))
    ex = page.locator("#ex-1")
    expect(ex.locator(".tr-user")).to_contain_text("Which tool?")
    card = ex.locator(".tr-tool-card").first
    expect(card.locator(".tr-tool-name")).to_contain_text("run_sql\"'><img src=")
    card.locator("summary").first.click()
    expect(card).to_contain_text("<b>bold</b>")
    expect(ex).to_contain_text("model\"'><img")  # the model name, as text
    ex.locator(".shiny-aside-pill").first.click()
    expect(page.locator(".shiny-aside-popover")).to_contain_text("Because\"'><img src=")
    assert page.evaluate("window.__xss_field") is None
    assert page.locator(".tr-main b").filter(has_text="bold").count() == 0
    settled(page)
    assert [p for p in leak.paths[before:] if "field" in p] == []
    # the id survives the round trip through every link: list row, copy link, the URL
    expect(page.locator(".tr-conversation")).to_have_attribute("data-conversation", HOSTILE_ID)
    assert parse_qs(urlparse(page.url).query)["conversation"] == [HOSTILE_ID]
    link = ex.locator("a.tr-ex-anchor").get_attribute("href")
    assert parse_qs(link.lstrip("?"))["conversation"] == [HOSTILE_ID]


def test_a_link_with_a_unicode_digit_renders_with_a_note(open_app):
    page = open_app("?conversation=scene-multi&exchange=²&view=nonsense")
    expect(page.locator(".tr-link-note")).to_contain_text("exchange=²")
    expect(page.locator(".tr-link-note")).to_contain_text("view=nonsense")
    expect(page.locator("#ex-4")).to_be_visible()
    # the session is alive: a click still navigates
    page.locator(".tr-row").first.click()
    expect(page.locator("#shiny-disconnected-overlay")).to_have_count(0)


@pytest.fixture
def broken_log_app(traces_dir, tmp_path):
    log = tmp_path / "a-directory"
    log.mkdir()
    app = start_app(traces_dir, log)
    yield app
    app.stop()


def test_an_unusable_review_log_is_one_line_and_the_session_lives(page, broken_log_app):
    page.goto(broken_log_app.url + "?conversation=scene-rules&exchange=1")
    page.wait_for_selector("#ex-1 .tr-rules", timeout=30_000)
    expect(page.locator(".tr-log-problem")).to_contain_text("is a directory")
    rule = page.locator("#ex-1 .tr-rule[data-rule='no-banned-phrases']")
    rule.locator(".tr-verdict-btn[data-verdict='correct']").click()
    expect(page.locator(".shiny-notification-error")).to_contain_text("Not saved")
    page.locator("#review-toggle_flag").click()
    expect(page.locator("#shiny-disconnected-overlay")).to_have_count(0)
    # reading goes on: another conversation opens
    page.goto(broken_log_app.url + "?conversation=scene-multi")
    expect(page.locator("#ex-2")).to_be_visible(timeout=30_000)
