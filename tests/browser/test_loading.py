"""Start-up and change: the server answers at once with progress, followed live, then opens
the app itself the moment the data is ready."""

from __future__ import annotations

import os
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import expect
from shiny.playwright import controller

from tests.browser.conftest import RunningApp, free_port, start_app
from tests.fixtures import A, Q, Recorder
from trajectory_review.app.page import FALLBACK_RELOAD_SECONDS
from trajectory_review_bench.generate import generate


def start_held(traces: Path, tmp_path: Path) -> tuple[RunningApp, Path]:
    """The app, its start held where it reads the rules file: a named pipe holds it
    there, deterministically, until the test writes the file (no timing, no hook in the
    app). Returns the app and the rules file to write."""
    rules = tmp_path / "rules.toml"
    os.mkfifo(rules)
    env = {"TRAJECTORY_RULES": str(rules)}
    return start_app(traces, tmp_path / "reviews.jsonl", env=env, wait_judged=False), rules


def test_the_page_reports_progress_then_opens_the_deep_link(page, tmp_path, traces_dir):
    app, rules = start_held(traces_dir, tmp_path)
    try:
        page.goto(app.url + "?view=answers&tag=C")
        status = page.locator(".tr-loading-status")
        expect(status).to_have_text("Reading the reply rules")
        # the page follows the start over its live link: it does not reload itself
        # every few seconds (it did every 2 s, so the list showed up to 2 s late)
        page.evaluate("window.trSamePage = true")
        # a window, not an event: what is checked is that nothing happens for longer than
        # the old reload's period
        page.wait_for_timeout(3_000)
        assert page.evaluate("window.trSamePage") is True
        # the fallback reload, for a page whose live link is down, is no timed refresh of
        # a working page (WCAG 2.2.1): static/loading.js runs it only without the link
        assert page.locator("meta[http-equiv='refresh']").count() == 0
        fallback = page.locator("[data-fallback-reload]").get_attribute("data-fallback-reload")
        assert fallback == str(FALLBACK_RELOAD_SECONDS)
        rules.write_text("# the shipped defaults\n")  # the start goes on
        # the server says the data is ready and the page opens the app, with the link's
        # state, long before the fallback reload would have
        expect(page.locator(".tr-list-summary")).to_contain_text(
            "answers", timeout=(FALLBACK_RELOAD_SECONDS - 10) * 1000
        )
        controller.InputCheckboxGroup(page, "list-tags").expect_selected(["C"])
        pills = page.locator(".tr-row .tr-pill")
        assert {pills.nth(i).get_attribute("data-tag") for i in range(pills.count())} == {"C"}
    finally:
        app.stop()


def test_a_page_whose_session_starts_once_the_data_is_ready_opens_the_app(
    page, tmp_path, traces_dir
):
    # The race the live progress page must not lose: the page is drawn as the progress
    # page, and its session reaches the server only after the data is ready. The
    # session's first messages are held back (Playwright sits between the page and the
    # server's websocket) until then.
    app, rules = start_held(traces_dir, tmp_path)
    held: list[str | bytes] = []
    servers: list = []

    def route(ws) -> None:
        server = ws.connect_to_server()
        if not servers:  # the progress page's session: held back
            ws.on_message(lambda message: held.append(message))
        servers.append(server)

    try:
        page.route_web_socket("**/websocket/**", route)
        page.goto(app.url + "?view=answers&tag=C")
        expect(page.locator(".tr-loading-status")).to_have_text("Reading the reply rules")
        deadline = time.time() + 30
        while not held:  # the session's first message, not yet with the server
            assert time.time() < deadline, "the session never spoke"
            page.wait_for_timeout(50)  # Playwright hands over websocket events meanwhile
        rules.write_text("# the shipped defaults\n")
        deadline = time.time() + 60
        while b'id="list-rows"' not in urllib.request.urlopen(app.url, timeout=30).read():
            assert time.time() < deadline, "the data never got ready"
            time.sleep(0.1)
        for message in held:  # now the session starts, on a progress page
            servers[0].send(message)
        page.route_web_socket("**/websocket/**", lambda ws: ws.connect_to_server())
        expect(page.locator(".tr-list-summary")).to_contain_text(
            "answers", timeout=(FALLBACK_RELOAD_SECONDS - 10) * 1000
        )
        controller.InputCheckboxGroup(page, "list-tags").expect_selected(["C"])
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
        # no reload loop: the page stays and says why (its live link would open the
        # app once the traces are read after all)
        # the fallback reload, for a page whose live link is down, is no timed refresh of
        # a working page (WCAG 2.2.1): static/loading.js runs it only without the link
        assert page.locator("meta[http-equiv='refresh']").count() == 0
        fallback = page.locator("[data-fallback-reload]").get_attribute("data-fallback-reload")
        assert fallback == str(FALLBACK_RELOAD_SECONDS)
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


def test_traces_without_a_conversation_say_so_and_fill_in_when_one_arrives(page, tmp_path):
    # A new deployment: the recorder has written only spans that hold no conversation. The
    # list said "Nothing matches these filters" beside a date chip for today, as if a
    # filter hid something.
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "trace-1.jsonl").write_text('{"resourceSpans": []}\n')
    app = start_app(traces, tmp_path / "reviews.jsonl", env={"TRAJECTORY_WATCH_SECONDS": "1"})
    try:
        page.goto(app.url)
        expect(page.locator(".tr-empty")).to_have_text(
            "These traces hold no conversation yet; the list fills in when they do."
        )
        expect(page.locator(".tr-list-summary")).to_contain_text("0 conversations")
        expect(page.locator(".tr-chip-filter")).to_have_count(0)
        expect(page.locator(".tr-header-stats")).to_have_text("0 conversations · 0 spans · 1 file")
        r = Recorder()
        r.turn("first", [Q("The first question"), A("Its answer.")], tag="A")
        r.write(traces / "trace-2.jsonl")
        page.locator(".tr-refresh").click(timeout=60_000)
        expect(page.locator(".tr-row[data-conversation='first']")).to_be_visible(timeout=30_000)
    finally:
        app.stop()


def test_a_connect_server_out_of_reach_is_said_on_the_page_and_in_the_log(page, tmp_path):
    # serve on a Connect content item whose server does not answer: the progress page
    # says why (it spun on an empty app for as long as one watched), and so does the log
    closed = free_port()  # nothing listens there
    log = tmp_path / "serve.log"
    env = {"CONNECT_SERVER": f"http://127.0.0.1:{closed}", "CONNECT_API_KEY": "not-a-key"}
    app = start_app(["connect:0b1c2d3e-aaaa-bbbb-cccc-123456789abc"],
                    tmp_path / "reviews.jsonl", env=env, wait_judged=False, log=log)  # fmt: skip
    try:
        page.goto(app.url)
        failed = page.locator(".tr-loading-failed .tr-loading-status")
        # what went wrong, not only that nothing was read
        expect(failed).to_contain_text("ConnectError", timeout=60_000)
        expect(failed).to_contain_text("no traces read from Posit Connect yet")
        said = [ln for ln in log.read_text().splitlines() if ln.startswith("error: ")]
        assert len(said) == 1 and "ConnectError" in said[0]
    finally:
        app.stop()
