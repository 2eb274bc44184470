"""The app reading two assistants' traces from (a stand-in for) Posit Connect, and picking
up a new trace after the refresh (issue #9)."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import start_app
from tests.fixtures import A, Q, Recorder, span_lines
from tests.sources.connect_standin import ConnectStandIn
from trajectory_review_bench import otlp
from trajectory_review_bench.generate import generate

FOREST = "11111111-2222-4333-8444-555555555555"
SUPPORT = "66666666-7777-4888-9999-aaaaaaaaaaaa"


@pytest.fixture(scope="module")
def connect_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("connect")
    standin = ConnectStandIn()
    for guid, seed in ((FOREST, 21), (SUPPORT, 22)):
        generate(root / guid, conversations=6, seed=seed)
        standin.add(guid, span_lines(root / guid))
    app = start_app(
        [f"connect:{FOREST}", f"connect:{SUPPORT}"],
        root / "reviews.jsonl",
        env={
            "CONNECT_SERVER": standin.url,
            "CONNECT_API_KEY": standin.key,
            "TRAJECTORY_CACHE": str(root / "cache"),
            "TRAJECTORY_WATCH_SECONDS": "1",
        },
    )
    yield app, standin, root
    app.stop()
    standin.stop()


def first_question(folder) -> str:
    for f in sorted(folder.rglob("*.jsonl*")):
        for line in f.read_text().splitlines() if f.suffix == ".jsonl" else []:
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for sp in ss["spans"]:
                        for a in sp["attributes"]:
                            if a["key"] == "gen_ai.input.messages":
                                msgs = json.loads(a["value"]["stringValue"])
                                return msgs[0]["parts"][0]["content"]
    raise AssertionError("no question in the generated traces")


def test_both_assistants_are_listed_and_a_new_trace_appears_after_reload(page, connect_app):
    app, standin, root = connect_app
    page.goto(app.url)
    page.wait_for_selector(".tr-list-summary", timeout=60_000)
    expect(page.locator(".tr-header-stats")).to_contain_text("12 conversations")
    for guid in (FOREST, SUPPORT):
        question = first_question(root / guid)
        page.goto(app.url + "?q=" + httpx.QueryParams({"q": question[:40]})["q"])
        expect(page.locator(".tr-row").first).to_be_visible(timeout=30_000)
    # a new answer is recorded on Connect while the app runs
    r = Recorder()
    r._t = time.time_ns()  # recorded now: newer than anything the app has read
    r.turn("brand-new-conversation", [Q("ZEBRA new question?"), A("A new answer.")], tag="A")
    body = "\n".join(otlp.line([s]) for s in r.spans) + "\n"
    resp = httpx.post(f"{standin.url}/__test__/content/{SUPPORT}/traces", content=body)
    assert resp.status_code == 204
    page.goto(app.url)
    reload = page.locator(".tr-refresh")
    expect(reload).to_be_visible(timeout=60_000)
    # a sync that finished as the page opened may offer a reload first (12 conversations):
    # the offer follows the traces, and says 13 once the new span is read
    expect(reload).to_contain_text("13 conversations", timeout=60_000)
    reload.click()
    page.wait_for_selector(".tr-list-summary", timeout=30_000)
    page.goto(app.url + "?q=ZEBRA")
    expect(page.locator(".tr-row")).to_have_count(1, timeout=30_000)
    expect(page.locator(".tr-row")).to_contain_text("ZEBRA new question?")
