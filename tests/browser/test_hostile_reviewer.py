"""A hostile reviewer and a hostile browser (issue #44): a pasted pattern that backtracks
without end under Python's re, a select value that names a server path, and a rules
folder with a pipe and a symlink out of it. No other page stalls, no file is read that
was not offered, and nothing says which paths exist."""

from __future__ import annotations

import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect
from shiny.playwright import controller

from tests.browser.conftest import RunningApp, send_input, start_app
from tests.fixtures import generated

HOSTILE = '[[no-banned-phrases.pattern]]\nregex = "(\\\\w+\\\\s?)*$"\nreason = "runaway"\n'


@pytest.fixture(scope="module")
def hostile_app(tmp_path_factory) -> Iterator[RunningApp]:
    root = tmp_path_factory.mktemp("hostile-reviewer")
    rules = root / "rules"
    rules.mkdir()
    (rules / "strict.toml").write_text("[says-something]\nmin_words = 30\n")
    secret = root / "secret.toml"
    secret.write_text("[says-something]\nmin_words = 99\n")
    (rules / "escape.toml").symlink_to(secret)
    os.mkfifo(rules / "pipe.toml")
    app = start_app(
        generated(2_500, seed=23),
        root / "reviews.jsonl",
        env={"TRAJECTORY_RULES_DIR": str(rules)},
    )
    yield app
    app.stop()


def _what_if(page, app: RunningApp) -> None:
    page.goto(app.url)
    page.wait_for_selector(".tr-list-summary", timeout=60_000)
    controller.NavsetUnderline(page, "main_tabs").set("whatif")


def test_a_runaway_pattern_runs_apart_and_another_page_loads_meanwhile(page, hostile_app):
    _what_if(page, hostile_app)
    page.locator("#whatif-pasted").fill(HOSTILE)
    expect(page.locator("#whatif-checked")).to_contain_text("Candidate: the pasted profile")
    page.locator("#whatif-run").click()
    started = time.monotonic()
    with urllib.request.urlopen(hostile_app.url, timeout=30) as resp:
        assert resp.status == 200 and b"list" in resp.read()
    assert time.monotonic() - started < 2.0  # the home page, answered during the run
    other = page.context.new_page()
    other.goto(hostile_app.url)
    other.wait_for_selector(".tr-list-summary", timeout=30_000)
    other.close()
    result = page.locator(".tr-whatif-result")
    expect(result).to_be_visible(timeout=120_000)
    expect(result.locator("tr[data-rule='no-banned-phrases']")).to_contain_text("+")


def test_only_the_offered_profiles_are_listed(page, hostile_app):
    _what_if(page, hostile_app)
    options = page.locator("#whatif-profile option")
    expect(options).to_have_count(4)  # pasted, two shipped, strict.toml
    labels = options.all_inner_texts()
    assert "strict.toml" in labels and not any("escape" in x or "pipe" in x for x in labels)
    controller.InputSelect(page, "whatif-profile").set("folder:strict.toml")
    expect(page.locator("#whatif-checked")).to_contain_text("Candidate: strict.toml")


@pytest.mark.parametrize(
    "value",
    ["/etc/passwd", "../secret.toml", "folder:escape.toml", "folder:pipe.toml", "/dev/zero"],
)
def test_a_crafted_profile_value_reads_nothing_and_reveals_nothing(page, hostile_app, value):
    _what_if(page, hostile_app)
    send_input(page, "whatif-profile", value)
    said = page.locator(".tr-whatif-error")
    expect(said).to_have_text("That profile is not one this app offers.")
    started = time.monotonic()  # a FIFO opened on the event loop blocked every session
    with urllib.request.urlopen(hostile_app.url, timeout=30) as resp:
        assert resp.status == 200
    assert time.monotonic() - started < 2.0
    assert Path("/etc/passwd").name not in (said.text_content() or "")
