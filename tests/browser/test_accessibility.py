"""Every screen passes axe-core's WCAG 2.1 A and AA rules (issue #48): axe-core itself
(bundled by axe-playwright-python, pinned) run in Chromium on each screen and dialog,
over the suite's traces (their hostile scenes included), over traces with right-to-left
text and labels long enough to wrap, and on the progress and 403 pages."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect
from shiny.playwright import controller

from tests.browser.conftest import RunningApp, start_app
from tests.browser.scenes import HOSTILE_ID
from tests.fixtures import CALL, RESULT, A, Q, Recorder
from trajectory_review.listing.urls import conversation_href

AXE = Axe()
WCAG_21_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}


def violations(page: Page) -> list[str]:
    """Each element axe-core finds failing a WCAG 2.1 A or AA rule, as one line."""
    found = AXE.run(page, options=WCAG_21_AA).response["violations"]
    return [
        f"{v['id']}: {n['target']}: {n['failureSummary'].splitlines()[-1].strip()}"
        for v in found
        for n in v["nodes"]
    ]


def settle_motion(page: Page) -> None:
    """Wait until no element is mid-transition and Shiny has redrawn every output: axe
    measures contrast on what is drawn, and a dialog fading in, or an output Shiny dims
    while it recalculates, is for a moment grey on grey."""
    page.evaluate(
        "() => Promise.all(document.getAnimations().map(a => a.finished.catch(() => null)))"
    )
    expect(page.locator(".recalculating:visible")).to_have_count(0)
    page.evaluate(
        "() => Promise.all(document.getAnimations().map(a => a.finished.catch(() => null)))"
    )


def tab(page: Page, value: str) -> None:
    controller.NavsetUnderline(page, "main_tabs").set(value)


@pytest.mark.parametrize(
    "query",
    [
        "",  # the list and the first conversation
        "?view=answers",
        "?view=flagged",  # the QA queue, an answer with its rule findings open
        "?conversation=scene-hostile",
        "?conversation=scene-label",
        conversation_href(HOSTILE_ID),
    ],
)
def test_the_list_and_transcript_have_no_wcag_violation(open_app, query):
    page = open_app(query)
    page.locator(".tr-tool summary, details.tr-raw > summary").first.click()  # a card open
    assert violations(page) == []


@pytest.mark.parametrize("value", ["quality", "whatif", "chart"])
def test_each_tab_has_no_wcag_violation(open_app, value):
    page = open_app()
    tab(page, value)
    expect(page.locator(f".tab-pane[data-value='{value}']")).to_be_visible()
    page.wait_for_timeout(300)  # the tab's outputs drawn
    assert violations(page) == []


def test_the_help_and_warnings_dialogs_have_no_wcag_violation(open_app):
    page = open_app()
    page.locator("body").press("?")
    expect(page.locator(".tr-help-card")).to_be_visible()
    assert violations(page) == []
    page.keyboard.press("Escape")
    page.locator(".tr-warn-btn").click()
    expect(page.locator(".modal.show")).to_be_visible()
    settle_motion(page)
    assert violations(page) == []


def test_the_sample_bar_and_disagreements_have_no_wcag_violation(open_app):
    page = open_app()
    tab(page, "quality")
    page.locator("#samples-size").fill("2")
    page.locator("#samples-draw").click()
    expect(page.locator(".tr-sample-bar")).to_be_visible()
    settle_motion(page)
    assert violations(page) == []  # the quality tab with its sample and disagreements
    tab(page, "transcript")
    expect(page.locator(".tr-sample-bar")).to_be_visible()
    settle_motion(page)
    assert violations(page) == []


@pytest.fixture(scope="module")
def wide_world(tmp_path_factory) -> Iterator[RunningApp]:
    """Right-to-left questions and answers, a conversation and a tool of long names, and
    an artifact document: text that wraps, mirrors and opens."""
    root = tmp_path_factory.mktemp("a11y")
    r = Recorder()
    long = "forest_inventory_" * 12
    r.turn(
        "rtl-" + "x" * 120,
        [
            Q("ما هو متوسط الغطاء الشجري في القطعة الثانية عشرة؟"),
            CALL("c1", long + "query", {"sql": "select avg(canopy) from plots"}),
            RESULT("c1", "0.61"),
            A("متوسط الغطاء هو 61٪.\n<artifact id=\"report\" title=\"تقرير الغطاء\">"
              "---\ntitle: تقرير الغطاء\n---\n\n# الغطاء\n\nالقيمة 61٪.</artifact>"),
        ],
        tag="C",
    )  # fmt: skip
    (root / "traces").mkdir()
    r.write(root / "traces" / "t.jsonl")
    app = start_app(root / "traces", root / "reviews.jsonl")
    yield app
    app.stop()


def test_right_to_left_text_long_labels_and_an_open_artifact_have_no_wcag_violation(
    page, wide_world
):
    page.goto(wide_world.url)
    expect(page.locator(".tr-conversation")).to_be_visible(timeout=30_000)
    assert violations(page) == []
    page.locator(".tr-artifact > summary").first.click()
    expect(page.locator(".tr-artifact-rendered").first).to_be_visible()
    assert violations(page) == []


def test_the_progress_page_has_no_wcag_violation(page, tmp_path, traces_dir):
    rules = tmp_path / "rules.toml"
    os.mkfifo(rules)  # the start waits here until the test writes the rules
    app = start_app(traces_dir, tmp_path / "reviews.jsonl",
                    env={"TRAJECTORY_RULES": str(rules)}, wait_judged=False)  # fmt: skip
    try:
        page.goto(app.url)
        expect(page.locator(".tr-loading-status")).to_be_visible()
        assert violations(page) == []
        rules.write_text("# the shipped defaults\n")
    finally:
        app.stop()


def test_the_403_page_has_no_wcag_violation(page, app_server):
    port = app_server.port
    refused = httpx.get(f"http://127.0.0.1:{port}/", headers={"Host": f"rebound.example:{port}"})
    assert refused.status_code == 403
    page.set_content(refused.text)  # the page the browser was sent, as it was sent
    assert page.locator("html").get_attribute("lang") == "en"
    assert violations(page) == []


def test_the_bundled_axe_core_is_the_pinned_one():
    # what "no violation" was measured with: a newer axe-core may know more rules
    import axe_playwright_python

    script = Path(axe_playwright_python.__file__).with_name("axe.min.js").read_text()
    assert "axe v4.12" in script[:200]


@pytest.mark.parametrize(
    ("width", "height", "zoom"),
    [(320, 640, 1), (640, 450, 2)],  # WCAG 1.4.10's 320 px; 1280 × 900 at 200 %
)
def test_the_page_reflows_at_320_pixels_and_200_percent_zoom(
    browser, app_server, width, height, zoom
):
    context = browser.new_context(
        viewport={"width": width, "height": height}, device_scale_factor=zoom
    )
    page = context.new_page()
    try:
        page.goto(app_server.url + "?view=flagged")
        expect(page.locator(".tr-conversation")).to_be_visible(timeout=30_000)
        # nothing scrolls sideways: the page is as wide as the window
        wide = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0
        # and nothing is lost: the answer, its flags and the header's controls are there
        for shown in (".tr-exchange", ".tr-verdict-btn", ".tr-warn-btn", ".tr-help-btn"):
            expect(page.locator(shown).first).to_be_visible()
        assert violations(page) == []
    finally:
        context.close()


def test_pills_and_marks_have_names_that_say_what_they_mean(open_app):
    page = open_app("?view=flagged")
    # a pill names its trust level and what that level means, from the display table
    pills = page.get_by_role(
        "note", name=re.compile(r"^(Verified answer|Cited|Untrusted|No claim): \w")
    )
    expect(pills.first).to_be_visible()
    # a row's rule badge says it is a rule and what its failing does, in the row's name
    row = page.locator(".tr-row").first
    expect(row).to_have_accessible_name(
        re.compile(r"rule [a-z-]+ \((would withhold the answer|fails the metric only)\)")
    )
    # the live regions: the list's summary ("k of N reviewed"), Shiny's notifications
    expect(page.locator(".tr-list-summary")).to_have_attribute("aria-live", "polite")
    expect(page.locator("#shiny-notification-panel")).to_have_attribute("aria-live", "polite")


def test_motion_stops_for_a_reader_who_asked_for_less(browser, app_server):
    context = browser.new_context(reduced_motion="reduce")
    page = context.new_page()
    try:
        page.goto(app_server.url)
        expect(page.locator(".tr-list-summary")).to_be_visible(timeout=30_000)
        # any transition on the page (Shiny fading a recalculating output, bslib sliding a
        # sidebar, one of ours) takes no time; Bootstrap's components already do this
        took = page.evaluate(
            "() => { const d = document.createElement('div');"
            " d.style.transition = 'opacity 1s'; d.style.animation = 'x 2s';"
            " document.body.append(d); const s = getComputedStyle(d);"
            " const t = [parseFloat(s.transitionDuration), parseFloat(s.animationDuration)];"
            " d.remove(); return t; }"
        )
        assert max(took) <= 0.001
    finally:
        context.close()
