"""Judging after the list is up (issue #11): while the reply rules run over the answers,
the QA queue says how far they are and that its count is not final; once they are in, it
shows exactly the count a full replay gives (`lint`, which replays and judges every
answer in one pass)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import start_app
from trajectory_review.tools.generate import generate

# Enough answers that judging them in one process takes seconds on any machine: the page
# must see the rules partway.
CONVERSATIONS = 20_000


@pytest.fixture(scope="module")
def judging_app(tmp_path_factory):  # noqa: ANN001, ANN201
    root = tmp_path_factory.mktemp("judging")
    traces = root / "traces"
    generate(traces, conversations=CONVERSATIONS, seed=41)
    lint = subprocess.run(
        [sys.executable, "-m", "trajectory_review.tools.cli", "lint", str(traces), "--json",
         "--fail-on", "never"],
        capture_output=True, check=True, env={**os.environ, "TRAJECTORY_CACHE": "off"},
    )  # fmt: skip
    withheld = sum(a["would_collapse"] for a in json.loads(lint.stdout)["answers"])
    app = start_app(
        traces,
        root / "reviews.jsonl",
        env={"TRAJECTORY_WORKERS": "1", "TRAJECTORY_CACHE": "off"},
        wait_judged=False,
    )
    yield app, withheld
    app.stop()


def shown_count(text: str) -> int:
    m = re.search(r"([\d,]+) answers?", text)
    assert m, text
    return int(m.group(1).replace(",", ""))


def test_the_queue_says_it_is_judging_then_shows_what_a_full_replay_gives(page, judging_app):
    app, withheld = judging_app
    assert withheld > 100
    page.goto(app.url + "?view=flagged", timeout=120_000)
    # the progress page reloads itself into the app once every answer is replayed
    page.wait_for_selector(".tr-list-summary", timeout=300_000)
    summary = page.locator(".tr-list-summary")
    note = page.locator(".tr-judging")
    expect(note).to_contain_text(re.compile(r"Judging answers with the reply rules: \d+%"))
    # one read of the summary holds the count and the note drawn with it: a count shown
    # while judging says it is not final, and is a part of the final one
    text = summary.inner_text()
    if "Judging answers" in text:
        assert "so far" in text
        assert shown_count(text) <= withheld
    # then the rules are in: the note goes, and the count is the full replay's
    expect(note).to_have_count(0, timeout=240_000)
    expect(summary).not_to_contain_text("so far")
    expect(summary).to_contain_text(f"{withheld:,} answers")
