"""100k conversations: the first page appears and filters answer without shipping the corpus.

Runs last (file name order) and takes a few minutes: generating and indexing 100k
conversations is most of it.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import open_filters, start_app
from trajectory_review.tools.generate import generate

CONVERSATIONS = 100_000


@pytest.fixture(scope="module")
def big_app(tmp_path_factory):  # noqa: ANN001, ANN201
    root = tmp_path_factory.mktemp("big")
    generate(root / "traces", conversations=CONVERSATIONS, seed=29)
    app = start_app(root / "traces", root / "reviews.jsonl")
    yield app
    app.stop()
    # ~1.4 GB of traces: do not leave them behind
    import shutil

    shutil.rmtree(root / "traces", ignore_errors=True)


def test_first_page_and_filters_never_ship_the_corpus(page, big_app):
    received: list[int] = []
    page.on(
        "websocket",
        lambda ws: ws.on(
            "framereceived", lambda f: received.append(len(f) if isinstance(f, str | bytes) else 0)
        ),
    )
    page.goto(big_app.url, timeout=120_000)
    # the server answers at once with a progress page that reloads into the app once
    # ~1.1M spans are indexed and every answer replayed (minutes on a busy machine)
    page.wait_for_selector(".tr-row", timeout=400_000)
    expect(page.locator(".tr-list-summary")).to_contain_text(re.compile(r"1\d\d,\d{3} conv"))
    assert 0 < page.locator(".tr-row").count() <= 100
    page.locator("#list-view input[value='answers']").check()
    expect(page.locator(".tr-list-summary")).to_contain_text("answers")
    assert 0 < page.locator(".tr-row").count() <= 100
    open_filters(page)
    page.locator("#list-tags input[value='C']").check()
    expect(page).to_have_url(re.compile(r"view=answers.*tag=C"))
    rows = page.locator(".tr-row .tr-pill")
    # a correctness check, not a timing one: a loaded CI machine gets room
    expect(rows.first).to_have_attribute("data-tag", "C", timeout=30_000)
    assert 0 < rows.count() <= 100
    assert {rows.nth(i).get_attribute("data-tag") for i in range(rows.count())} == {"C"}
    # everything the server sent stays far below the size of the corpus (~1.4 GB)
    assert sum(received) < 5_000_000


def test_deep_link_opens_the_list_page_that_holds_the_conversation(page, big_app):
    page.goto(big_app.url + "?view=answers", timeout=120_000)
    page.wait_for_selector(".tr-row", timeout=120_000)
    for n in (2, 3):
        page.locator("button.tr-page", has_text="Next").click()
        expect(page.locator(".tr-list-summary")).to_contain_text(f"page {n} of")
    row = page.locator(".tr-row").nth(7)
    cid, ex = row.get_attribute("data-conversation"), row.get_attribute("data-exchange")
    page.goto(big_app.url + f"?view=answers&conversation={cid}&exchange={ex}")
    selected = page.locator(f".tr-row[data-conversation='{cid}'][data-exchange='{ex}']")
    expect(selected).to_be_visible(timeout=30_000)
    expect(page.locator(".tr-list-summary")).to_contain_text("page 3 of")
    expect(page.locator(".tr-conversation")).to_have_attribute("data-conversation", cid)
