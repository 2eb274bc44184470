"""A team on one Connect content (issue #9 §3): several processes, one review log, one
cache; and reviewers' names when Connect gives none."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import add_note, start_app


@pytest.fixture(scope="module")
def two_processes(traces_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("team")
    env = {"TRAJECTORY_CACHE": str(root / "cache")}
    apps = [start_app(traces_dir, root / "reviews.jsonl", env=env) for _ in range(2)]
    yield apps, root
    for app in apps:
        app.stop()


def test_two_processes_share_the_review_log_and_the_cache(browser, two_processes):
    (a, b), root = two_processes
    one, other = browser.new_page(), browser.new_page()
    one.goto(a.url + "?conversation=scene-multi")
    other.goto(b.url + "?conversation=scene-multi")
    for page in (one, other):
        page.wait_for_selector(".tr-conversation", timeout=60_000)
    add_note(one, "seen from the other process")
    expect(other.locator(".tr-notes")).to_contain_text("seen from the other process")
    # one index and one catalog, built once and read by both
    assert len(list((root / "cache").glob("index-*.duckdb"))) == 1
    assert len(list((root / "cache").glob("answers-*.parquet"))) == 1


@pytest.fixture(scope="module")
def anonymous_on_connect(traces_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("anon")
    # what Posit Connect sets for its content; with anonymous access session.user is None
    app = start_app(traces_dir, root / "reviews.jsonl", env={"CONNECT_CONTENT_GUID": "c0ffee"})
    yield app
    app.stop()


def test_an_anonymous_reviewer_is_asked_once_for_a_name_and_never_given_the_servers(
    page, anonymous_on_connect
):
    app = anonymous_on_connect
    page.goto(app.url + "?conversation=scene-multi")
    page.wait_for_selector(".tr-conversation", timeout=60_000)
    form = page.locator(".tr-who")
    expect(form).to_be_visible()
    page.locator("#review-note").fill("before a name")
    page.locator("#review-add_note").click()
    expect(page.locator(".shiny-notification")).to_contain_text("Give your name first")
    expect(page.locator(".tr-right")).to_contain_text("No review events yet")
    page.locator("#review-name").fill("Ada Lovelace")
    page.locator("#review-save_name").click()
    expect(form).to_be_hidden()
    add_note(page, "with a name")
    expect(page.locator(".tr-notes")).to_contain_text("Ada Lovelace")
    page.reload()
    page.wait_for_selector(".tr-conversation", timeout=30_000)
    expect(page.locator(".tr-right")).to_contain_text("Reviewing as Ada Lovelace")
    expect(page.locator(".tr-who")).to_have_count(0)
    log = app.review_log.read_text()
    assert '"author":"Ada Lovelace"' in log and "before a name" not in log
