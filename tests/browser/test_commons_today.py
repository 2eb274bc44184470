"""What today's commons records, in the browser (issue #35): the shipped traces' newest
conversation has its records on provenance spans only, reminders on its questions and
a document handed to the user; and a hostile document stays text."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import RunningApp, settled, start_app
from tests.fixtures import A, Q, Recorder
from trajectory_review.model import provenance

SHIPPED = Path(__file__).resolve().parents[2] / "traces"
TODAY = "20261202t101500.000-commons-today"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory, leak) -> Iterator[RunningApp]:
    root = tmp_path_factory.mktemp("today")
    shutil.copytree(SHIPPED, root / "traces")  # nothing is written into the checkout
    leaky = f"http://127.0.0.1:{leak.port}"
    r = Recorder()
    r.turn(
        "hostile-document",
        [Q("A report, please."), A(
            "Here.\n"
            f'<artifact id="evil" title="&quot;&gt;<img src={leaky}/art-title '
            f'onerror=window.__xss_art=1>">\n---\ntitle: Hostile report\n---\n'
            f"<script>window.__xss_art=2</script><img src={leaky}/art-body "
            'onerror="window.__xss_art=3">\n<shiny-aside label="FAKE">FAKE PILL</shiny-aside>\n'
            f"![x]({leaky}/art-md)\n</artifact>\nDone."
        )],
        tag="C",
    )  # fmt: skip
    r.turn(
        "hostile-refused",
        [Q("Another, please."), A(
            f'<artifact id="evil2" title="&lt;b&gt;<img src={leaky}/refused-title '
            'onerror=window.__xss_art=4>">no frontmatter <img src=x onerror=window.__xss_art=5>'
            "</artifact>"
        )],
        tag="C",
    )  # fmt: skip
    r.write(root / "traces" / "hostile.jsonl")
    app = start_app(root / "traces", root / "reviews.jsonl")
    yield app
    app.stop()


def test_provenance_spans_reminders_and_a_document_as_the_user_saw_them(page, shipped, tmp_path):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(shipped.url + f"?conversation={TODAY}&exchange=2")
    first, second = page.locator("#ex-1"), page.locator("#ex-2")
    # the records are on the provenance spans only: the pills come from there
    expect(first.locator(".shiny-aside-pill")).to_contain_text(provenance.display("A").label)
    expect(second.locator(".tr-ex-pill")).to_contain_text(provenance.display("B").label)
    marker = second.locator(".tr-assistant .shiny-aside-pill[aria-label*='Reporting guide']")
    expect(marker).to_have_count(1)
    # the questions as the user wrote them; the reminders folded away, for the reviewer
    expect(second.locator(".tr-user")).to_contain_text("Write me a short report")
    user_text = second.locator(".tr-user > :not(.tr-reminders)").all_inner_texts()
    assert not any("reminder" in t.lower() for t in user_text)
    fold = second.locator(".tr-reminders")
    expect(fold.locator("summary")).to_contain_text("1 reminder to the model")
    # the document, where it was, as a chip that opens it rendered, its source a click on
    chip = second.locator(".tr-artifact[data-artifact='elk-hollow-canopy']")
    expect(chip.locator(".tr-artifact-title")).to_have_text("Elk Hollow canopy cover, 2022")
    expect(chip.locator(".tr-artifact-version")).to_have_text("v1")
    chip.locator("summary").first.click()
    expect(chip.locator(".tr-artifact-rendered h1")).to_have_text("Canopy cover")
    expect(chip.locator(".tr-artifact-rendered table")).to_have_count(1)
    chip.locator(".tr-artifact-source summary").click()
    expect(chip.locator(".tr-artifact-body")).to_contain_text("# Canopy cover")
    page.screenshot(path=str(tmp_path / "today.png"))  # scripts/screenshots.py: the README's


def test_a_hostile_document_title_and_body_stay_text(page, shipped, leak):
    before = len(leak.paths)
    page.goto(shipped.url + "?conversation=hostile-document")
    chip = page.locator("#ex-1 .tr-artifact[data-artifact='evil']")
    expect(chip.locator(".tr-artifact-title")).to_have_text("Hostile report")  # frontmatter's
    chip.locator("summary").first.click()
    rendered = chip.locator(".tr-artifact-rendered")
    expect(rendered).to_contain_text("<script>window.__xss_art=2</script>")
    expect(rendered).to_contain_text("FAKE PILL")
    expect(rendered.locator("script, img, shiny-aside, iframe")).to_have_count(0)
    chip.locator(".tr-artifact-source summary").click()
    body = chip.locator(".tr-artifact-body")
    expect(body).to_contain_text("<script>window.__xss_art=2</script>")
    # the title and the source hold text only: no element of the model's
    expect(chip.locator(".tr-artifact-title *, .tr-artifact-body *")).to_have_count(0)
    expect(page.locator("#ex-1 .shiny-aside-pill").filter(has_text="FAKE")).to_have_count(0)
    expect(page.locator("#ex-1 .tr-assistant")).to_contain_text(re.compile(r"Here\.[\s\S]*Done"))
    settled(page)
    assert page.evaluate("window.__xss_art") is None
    assert [p for p in leak.paths[before:] if "art" in p] == []


def test_a_refused_hostile_document_is_a_mark_of_text(page, shipped, leak):
    before = len(leak.paths)
    page.goto(shipped.url + "?conversation=hostile-refused")
    mark = page.locator("#ex-1 .tr-artifact-rejected[data-artifact='evil2']")
    expect(mark).to_contain_text("Document not saved")
    expect(mark).to_contain_text("<img src=")
    expect(mark.locator("img:not(.tr-icon), b, script")).to_have_count(0)
    expect(page.locator("#ex-1 .tr-artifact")).to_have_count(0)
    settled(page)
    assert page.evaluate("window.__xss_art") is None
    assert [p for p in leak.paths[before:] if "refused" in p] == []
