"""A team on one PostgreSQL store (issue #45): two `serve` processes, as a scaled-out
deployment runs them, each reviewer's note showing in the other's page; the database
stopped mid-session and started again, with nothing lost and no restart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect
from shiny.playwright import controller

from tests.browser.conftest import RunningApp, add_note, start_app

WHERE = "?conversation=scene-cited&exchange=1"


@pytest.fixture(scope="module")
def two_apps(traces_dir, pg, tmp_path_factory) -> Iterator[tuple[RunningApp, RunningApp]]:
    url = pg.database("team_store")
    root = tmp_path_factory.mktemp("team-store")
    env = {"TRAJECTORY_REVIEW_LOG": url}
    apps = [start_app(traces_dir, root / f"unused-{n}.jsonl", env=env) for n in (1, 2)]
    yield apps[0], apps[1]
    for app in apps:
        app.stop()
    assert not list(root.iterdir())  # no review file anywhere: the database holds them


def test_a_note_in_one_process_shows_in_the_other(browser, two_apps):
    one, two = (browser.new_context().new_page() for _ in range(2))
    one.goto(two_apps[0].url + WHERE)
    two.goto(two_apps[1].url + WHERE)
    for page in (one, two):
        expect(page.locator(".tr-conversation")).to_be_visible(timeout=30_000)
    add_note(one, "seen from the other process")
    expect(two.locator(".tr-notes")).to_contain_text("seen from the other process", timeout=5_000)


def test_the_database_away_keeps_the_text_and_the_next_save_after_it_works(browser, two_apps, pg):
    page = browser.new_context().new_page()
    page.goto(two_apps[0].url + WHERE)
    expect(page.locator(".tr-conversation")).to_be_visible(timeout=30_000)
    note = controller.InputSubmitTextarea(page, "review-note")
    pg.stop()
    try:
        note.set("written while the database was away")
        note.submit()
        said = page.locator(".shiny-notification-error")
        expect(said).to_contain_text("Not saved: review store postgresql://", timeout=15_000)
        assert "admin-pw" not in (said.text_content() or "")
        expect(page.locator("textarea#review-note")).to_have_value(
            "written while the database was away"
        )  # the text is still there to retry
        expect(page.locator(".tr-log-problem")).to_contain_text("cannot be")
        page.goto(two_apps[1].url + WHERE)  # the other process keeps serving meanwhile
        expect(page.locator(".tr-conversation")).to_be_visible(timeout=30_000)
    finally:
        pg.start()
    page.goto(two_apps[0].url + WHERE)
    add_note(page, "saved once it was back")
    other = browser.new_context().new_page()
    other.goto(two_apps[1].url + WHERE)
    expect(other.locator(".tr-notes")).to_contain_text("saved once it was back", timeout=10_000)
