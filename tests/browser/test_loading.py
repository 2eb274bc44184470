"""Start-up and change: the server answers at once with progress, then opens the app itself."""

from __future__ import annotations

import os

from playwright.sync_api import expect
from shiny.playwright import controller

from tests.browser.conftest import start_app
from tests.fixtures import A, Q, Recorder
from trajectory_review.tools.generate import generate


def test_the_page_reports_progress_then_opens_the_deep_link(page, tmp_path, traces_dir):
    # The start reads the rules file first; a named pipe holds it there, deterministically,
    # until the test writes the file: no timing, no hook in the app.
    rules = tmp_path / "rules.toml"
    os.mkfifo(rules)
    app = start_app(
        traces_dir,
        tmp_path / "reviews.jsonl",
        env={"TRAJECTORY_RULES": str(rules)},
        wait_judged=False,
    )
    try:
        page.goto(app.url + "?view=answers&tag=C")
        status = page.locator(".tr-loading-status")
        expect(status).to_have_text("Reading the reply rules")
        assert page.locator("meta[http-equiv='refresh']").get_attribute("content") == "2"
        rules.write_text("# the shipped defaults\n")  # the start goes on
        # the page reloads itself into the app, with the link's state
        expect(page.locator(".tr-list-summary")).to_contain_text("answers", timeout=60_000)
        controller.InputCheckboxGroup(page, "list-tags").expect_selected(["C"])
        pills = page.locator(".tr-row .tr-pill")
        assert {pills.nth(i).get_attribute("data-tag") for i in range(pills.count())} == {"C"}
    finally:
        app.stop()


def test_a_start_that_fails_says_why_on_the_page(page, tmp_path, traces_dir):
    rules = tmp_path / "rules.toml"
    rules.write_text('[grounded-identifiers]\nshapes = ["(unclosed"]\n')
    app = start_app(
        traces_dir,
        tmp_path / "reviews.jsonl",
        env={"TRAJECTORY_RULES": str(rules)},
        wait_judged=False,
    )
    try:
        page.goto(app.url)
        expect(page.locator(".tr-loading-title")).to_have_text("Could not load the traces.")
        status = page.locator(".tr-loading-status")
        expect(status).to_contain_text("rules.toml")
        expect(status).to_contain_text("[grounded-identifiers] shapes: bad regex")
        # no fast reload loop: a failed start is re-checked slowly
        assert page.locator("meta[http-equiv='refresh']").get_attribute("content") == "15"
    finally:
        app.stop()


def test_new_traces_are_offered_and_shown_after_a_reload(page, tmp_path):
    traces = tmp_path / "traces"
    generate(traces, conversations=20, seed=5)
    app = start_app(
        traces, tmp_path / "reviews.jsonl", env={"TRAJECTORY_WATCH_SECONDS": "1"}, wait_judged=False
    )
    try:
        page.goto(app.url + "?q=later-conversation")
        expect(page.locator(".tr-list-summary")).to_contain_text("0 conversations")
        expect(page.locator(".tr-refresh")).to_have_count(0)
        r = Recorder()
        r.turn("later-conversation", [Q("A question asked later"), A("Its answer.")], tag="A")
        r.write(traces / "trace-later.jsonl")
        banner = page.locator(".tr-refresh")
        expect(banner).to_be_visible(timeout=60_000)
        banner.click()
        row = page.locator(".tr-row[data-conversation='later-conversation']")
        expect(row).to_be_visible(timeout=30_000)
        expect(page.locator(".tr-list-summary")).to_contain_text("1 conversation ·")
    finally:
        app.stop()
