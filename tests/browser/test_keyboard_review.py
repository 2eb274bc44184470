"""A whole review with the keyboard alone (issue #48): from the list to an answer of the
QA queue, a flag judged, a note added, a dialog opened and closed with the focus handed
back, a sample drawn, a what-if run, and back to the list. Every element the focus
lands on shows a focus ring; no key press is a mouse click in disguise (the focus moves
by Tab and shortcuts only)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import RunningApp, start_app

# What a focused element looks like to a sighted keyboard user: the page's focus ring, or
# (an answer, moved to with n/p) the bar beside the current answer.
FOCUS_SHOWN = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return "nothing focused";
  if (e.classList.contains("tr-exchange")) {
    return e.classList.contains("tr-current") ? "" : "no bar";
  }
  const s = getComputedStyle(e);
  const shown = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 1;
  return shown ? "" : "no ring on " + e.outerHTML.slice(0, 80);
}"""
CANDIDATE = (
    "[no-banned-phrases]\n[[no-banned-phrases.pattern]]\nregex = '\\bplots\\b'\nreason = \"x\"\n"
)


@pytest.fixture(scope="module")
def kb_app(traces_dir, tmp_path_factory) -> Iterator[RunningApp]:
    """The suite's traces with a review log of this module's own: the walk judges answers."""
    app = start_app(traces_dir, tmp_path_factory.mktemp("kb") / "reviews.jsonl")
    yield app
    app.stop()


def ring(page: Page) -> None:
    assert page.evaluate(FOCUS_SHOWN) == ""


def selected(page: Page) -> tuple[str | None, str | None]:
    row = page.locator(".tr-row-selected")
    return row.get_attribute("data-conversation"), row.get_attribute("data-exchange")


def moved_on(page: Page, was: tuple[str | None, str | None]) -> None:
    """The queue has opened the next answer nobody finished, and it is drawn: the focus
    is walked only once the page holds still."""
    row = f'.tr-row-selected[data-conversation="{was[0]}"][data-exchange="{was[1]}"]'
    expect(page.locator(row)).to_have_count(0)
    expect(page.locator(".tr-row-selected")).to_have_count(1)
    _, ex = selected(page)
    expect(page.locator(f"#ex-{ex} .tr-rule").first).to_be_visible()
    expect(page.locator(".recalculating:visible")).to_have_count(0)
    # the answer opened by a key takes the focus (n/p and ] do the same): from there the
    # next Tab goes on
    expect(page.locator(f"#ex-{ex}")).to_be_focused()


def logged(page: Page, log: Path, text: str, seconds: float = 10) -> None:
    """Wait until the review log holds `text` (the server writes it after the key)."""
    for _ in range(int(seconds * 10)):
        if log.exists() and text in log.read_text():
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"the review log never got {text!r}")


def tab_to(page: Page, selector: str, limit: int = 120, back: bool = False) -> None:
    """Tab (or Shift+Tab) until the focus is on `selector`, checking the ring at each stop:
    the element must be reachable by the keyboard, and no stop on the way a trap."""
    seen = []
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        if page.evaluate("() => document.activeElement === document.body"):
            continue  # past the last element: the browser's own stop, then the first
        ring(page)
        if page.evaluate(f"() => document.activeElement.matches({json.dumps(selector)})"):
            return
        seen.append(page.evaluate("() => document.activeElement.outerHTML.slice(0, 60)"))
    raise AssertionError(f"{selector} not reached by the keyboard; passed {seen[-5:]}")


def choose_the_queue(page: Page) -> None:
    """From the list: search, then the Flagged view chosen among the views by arrows."""
    page.locator("body").press("/")
    expect(page.locator("#list-q")).to_be_focused()
    ring(page)
    tab_to(page, "input[name='list-view']:checked", back=True)
    flagged = page.locator("input[name='list-view'][value='flagged']")
    for _ in range(2):  # Conversations, Answers, Flagged: a radio group's arrows choose
        page.keyboard.press("ArrowRight")
    expect(flagged).to_be_checked()
    ring(page)
    expect(page).to_have_url(re.compile("view=flagged"))
    # the queue drawn (the arrows passed through the Answers view on the way): a key
    # pressed while the rows are replaced walks the rows being taken away
    expect(page.locator(".tr-queue-progress")).to_be_visible()
    expect(page.locator(".recalculating:visible")).to_have_count(0)


def test_a_whole_review_by_keyboard(page, kb_app):
    page.goto(kb_app.url)
    expect(page.locator(".tr-list-summary")).to_be_visible(timeout=30_000)
    choose_the_queue(page)
    # an answer of the queue (] walks its rows), its first flag judged, a note. The
    # server acts on keys in order (app/keys.py): an x sent before the answer ] opened
    # is on screen judges that answer, so the walk reads what is selected only once the
    # address has moved on (the view's first answer, chosen with the view, satisfied the
    # waits below before ] arrived, and the walk then expected the wrong answer next)
    at = page.url
    page.keyboard.press("]")
    expect(page).not_to_have_url(at, timeout=10_000)
    expect(page).to_have_url(re.compile(r"exchange=\d+"), timeout=10_000)
    expect(page.locator(".tr-row-selected")).to_have_count(1, timeout=10_000)
    _, ex = selected(page)
    expect(page.locator(f"#ex-{ex}.tr-current .tr-verdict-btn").first).to_be_visible()
    log = kb_app.review_log
    was = selected(page)
    page.keyboard.press("x")
    logged(page, log, '"false_positive"')
    moved_on(page, was)  # the answer is done: the queue opens the next one
    # the next answer is open: m opens the note of its first flag, Esc then c judges it
    # with that note (the help's own words)
    page.keyboard.press("m")
    expect(page.locator(".tr-verdict-note:focus")).to_have_count(1)
    ring(page)
    page.keyboard.type("checked by keyboard")
    page.keyboard.press("Escape")
    was = selected(page)
    page.keyboard.press("c")
    logged(page, log, "checked by keyboard")
    moved_on(page, was)
    # the help: opened and closed, the focus back where it was
    tab_to(page, ".tr-btn-flag")
    before = page.evaluate("() => document.activeElement.outerHTML")
    page.keyboard.press("?")
    expect(page.locator(".tr-help-card")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator(".tr-help")).to_be_hidden()
    assert page.evaluate("() => document.activeElement.outerHTML") == before
    # the warnings: a Shiny modal, the focus back on its button
    tab_to(page, ".tr-warn-btn", back=True)
    page.keyboard.press("Enter")
    expect(page.locator(".modal.show")).to_be_visible()
    # Bootstrap ignores Esc while the dialog is still sliding in
    page.evaluate("() => Promise.all(document.getAnimations().map(a => a.finished))")
    page.keyboard.press("Escape")
    expect(page.locator(".modal.show")).to_have_count(0)
    expect(page.locator(".tr-warn-btn")).to_be_focused()
    # a sample, drawn on the Rule quality tab
    # tabs: the active one takes the focus, arrows move among them (Bootstrap's own)
    tab_to(page, ".nav-link.active[data-value='transcript']")
    page.keyboard.press("ArrowRight")
    expect(page.locator(".nav-link.active[data-value='quality']")).to_be_focused()
    tab_to(page, "#samples-size")
    page.keyboard.press("Control+A")
    page.keyboard.type("2")
    tab_to(page, "#samples-draw")
    page.keyboard.press("Enter")
    expect(page.locator(".tr-sample-bar")).to_be_visible()
    # a what-if run
    # the sample opens in the transcript, its first answer the current one
    expect(page.locator(".nav-link.active[data-value='transcript']")).to_be_visible()
    tab_to(page, ".nav-link.active[data-value='transcript']", limit=400)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(page.locator(".nav-link.active[data-value='whatif']")).to_be_focused()
    tab_to(page, "#whatif-pasted")
    page.keyboard.insert_text(CANDIDATE)
    expect(page.locator("#whatif-checked")).to_contain_text("Candidate: the pasted profile")
    tab_to(page, "#whatif-run")
    page.keyboard.press("Enter")
    expect(page.locator(".tr-whatif-result")).to_be_visible(timeout=60_000)
    # and back to the list
    page.keyboard.press("Escape")
    page.locator("body").press("/")
    expect(page.locator("#list-q")).to_be_focused()
