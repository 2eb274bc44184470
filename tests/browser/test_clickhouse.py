"""Traces in ClickHouse (issue #13): two thousand conversations loaded into chdb with the
Collector's table, served from `chdb://DIR`, walked list → filter → transcript → note."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from playwright.sync_api import expect
from shiny.playwright import controller

from tests.browser.conftest import add_note, open_filters, start_app
from tests.fixtures import generated

CONVERSATIONS = 2_000


@pytest.fixture(scope="module")
def chdb_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("clickhouse")
    traces = generated(CONVERSATIONS, seed=13)
    store = f"chdb://{root / 'store'}"
    # `load` in a process of its own: a chdb directory is open in one process at a time
    subprocess.run(
        [sys.executable, "-m", "trajectory_review.tools.cli", "load", str(traces), store],
        check=True,
        capture_output=True,
    )
    app = start_app([store], root / "reviews.jsonl")
    yield app
    app.stop()


def test_a_chdb_store_is_listed_filtered_opened_and_noted(page, chdb_app):
    page.goto(chdb_app.url, timeout=120_000)
    page.wait_for_selector(".tr-row", timeout=300_000)
    # the generator adds a few edited and restored conversations to the 2,000 asked for
    expect(page.locator(".tr-header-stats")).to_contain_text(re.compile(r"2,0\d\d conversations"))
    expect(page.locator(".tr-header-stats")).to_contain_text("otel_traces in ClickHouse")
    # the hover names the source without a password, and the review log beside the store
    title = page.locator(".tr-header-stats").get_attribute("title") or ""
    assert "chdb://" in title and "reviews.jsonl" in title
    open_filters(page)
    page.locator("#list-tags input[value='C']").check()
    expect(page).to_have_url(re.compile(r"tag=C"))
    pills = page.locator(".tr-row .tr-pill")
    expect(pills.first).to_have_attribute("data-tag", "C", timeout=30_000)
    assert {pills.nth(i).get_attribute("data-tag") for i in range(pills.count())} == {"C"}
    controller.InputCheckboxGroup(page, "list-tags").expect_selected(["C"])
    row = page.locator(".tr-row").nth(2)
    cid = row.get_attribute("data-conversation")
    row.click()
    conversation = page.locator(".tr-conversation")
    expect(conversation).to_have_attribute("data-conversation", cid, timeout=30_000)
    # the transcript is replayed from the spans in ClickHouse: its C answer is there
    expect(conversation.locator(".tr-assistant[data-tag='C']").first).to_be_visible()
    add_note(page, "checked against the warehouse")
    page.reload()
    page.wait_for_selector(".tr-conversation", timeout=60_000)
    expect(page.locator(".tr-notes")).to_contain_text("checked against the warehouse")
    events = [json.loads(x) for x in chdb_app.review_log.read_text().splitlines()]
    assert any(e.get("text") == "checked against the warehouse" and e.get("conversation_id") == cid
               for e in events)  # fmt: skip
