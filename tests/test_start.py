"""A start: the first app page is drawn before the fill behind the list takes the
server's time (the two shared the GIL, and the page went out ~0.08 s later), and the
fill follows that page, or begins by itself when nobody asks for one."""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import pytest

from tests.fixtures import generated, until
from trajectory_review.app import data
from trajectory_review.app.data import Loader
from trajectory_review.app.server import make_app
from trajectory_review.listing import catalog as catalog_module
from trajectory_review.listing.catalog import FILL_CHUNK, FIRST_SLICE


@pytest.fixture(scope="module")
def traces_fill() -> Path:
    """A corpus whose fill takes two chunks after the first slice: the fill's rules are
    the same at any size, and each test here replays all of it."""
    conversations = 2_500
    assert conversations > FIRST_SLICE + FILL_CHUNK
    return generated(conversations, seed=23)


def _env(monkeypatch, traces, tmp_path) -> None:
    monkeypatch.setenv("TRAJECTORY_TRACES", str(traces))
    monkeypatch.setenv("TRAJECTORY_REVIEW_LOG", str(tmp_path / "reviews.jsonl"))
    monkeypatch.setenv("TRAJECTORY_CACHE", "off")


def test_the_fill_waits_for_the_first_app_page_then_reads_every_conversation(
    traces_fill, tmp_path, monkeypatch
):
    _env(monkeypatch, traces_fill, tmp_path)
    monkeypatch.setattr(data, "FIRST_PAGE_WAIT", 120.0)
    # chunks small enough that a fill not held has its first one in well within the
    # second waited below (a chunk of the usual size can take longer than that)
    monkeypatch.setattr(catalog_module, "FILL_CHUNK", 50)
    loader = Loader(watch_seconds=0)
    try:
        until(lambda: loader.data is not None or loader.failure is not None)
        assert loader.failure is None
        catalog = loader.data.catalog
        first = catalog.replayed
        time.sleep(1.0)  # a fill not held would have its first chunk in by now
        assert catalog.replayed == first and catalog.replaying is not None
        loader.page_served()
        until(lambda: catalog.replaying is None)
        assert catalog.replayed == loader.data.reader.stats.conversations > first
    finally:
        loader.stop()


def test_with_nobody_asking_the_fill_begins_by_itself(traces_fill, tmp_path, monkeypatch):
    _env(monkeypatch, traces_fill, tmp_path)
    monkeypatch.setattr(data, "FIRST_PAGE_WAIT", 0.2)
    loader = Loader(watch_seconds=0)
    try:
        until(lambda: loader.data is not None and loader.data.catalog.replaying is None)
        assert loader.data.catalog.replayed == loader.data.reader.stats.conversations
    finally:
        loader.stop()


def test_serving_the_app_page_lets_the_fill_begin(traces_fill, tmp_path, monkeypatch):
    # The app in this process, over Starlette's test client, so the wait can be set long:
    # without the page telling the loader, the fill would not begin within the test.
    with warnings.catch_warnings():  # the client's note that it would rather use httpx2
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    _env(monkeypatch, traces_fill, tmp_path)
    monkeypatch.setattr(data, "FIRST_PAGE_WAIT", 120.0)
    with TestClient(make_app()) as client:
        pages: list[str] = []

        def header() -> str:
            page = client.get("/").text
            pages.append(page)
            return page

        until(lambda: 'id="list-rows"' in header())  # the app page, not the progress page
        reading = re.search(r"reading ([\d,]+) conversations ·", pages[-1])
        assert reading, "the first app page holds the first slice only, so far"
        every = f">{reading.group(1)} conversations ·"  # the header, once all are read
        until(lambda: every in header())
