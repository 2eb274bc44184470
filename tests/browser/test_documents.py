"""Documents as the user had them (issue #46): versioned chips, a refused document's mark,
the document rendered (hostile markdown inert, no image fetched), an edit's card naming
the version it saved, and commons' request to cite folded apart from the tool's output."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import RunningApp, settled, start_app
from tests.fixtures import CALL, RESULT, A, Q, Recorder
from trajectory_review.model.citation_request import CITATION_REQUEST


def _doc(leak_port: int) -> str:
    return (
        "---\ntitle: Sales by region\n---\n\n# Revenue\n\nRevenue **rose** in the north.\n\n"
        '<script>window.__doc_xss=1</script><img src=x onerror="window.__doc_xss2=1">\n\n'
        f"![chart](http://127.0.0.1:{leak_port}/doc-image.png)\n\n"
        "[click](javascript:window.__doc_xss3=1)\n"
    )


@pytest.fixture(scope="module")
def docs_app(tmp_path_factory, leak) -> Iterator[RunningApp]:
    root = tmp_path_factory.mktemp("documents")
    doc = _doc(leak.port)
    r = Recorder()
    h = [
        Q("Write the report."),
        A(f'Here.\n<artifact id="sales" title="Tag title">{doc}</artifact>'),
    ]
    h += [
        Q("Make it say fell."),
        CALL("e1", "edit_artifact", {"id": "sales", "old_string": "rose", "new_string": "fell"}),
        RESULT("e1", "Saved version 2 of `sales`."),
        A("Done: it says fell now."),
    ]
    h += [
        Q("And a summary."),
        A('<artifact id="summary" title="Summary">no frontmatter here</artifact>'),
    ]
    h += [
        Q("Query plots."),
        CALL("q1", "run_sql", {"sql": "select count(*) from plots"}),
        RESULT("q1", "12 plots\n\n" + CITATION_REQUEST),
        A("There are 12 plots in the stands."),
    ]
    r.turn("docs", h, tag="C")
    (root / "traces").mkdir()
    r.write(root / "traces" / "t.jsonl")
    app = start_app(root / "traces", root / "reviews.jsonl")
    yield app
    app.stop()


def test_chips_show_the_version_and_the_title_the_user_saw_and_open_rendered(page, docs_app,
                                                                             leak):  # fmt: skip
    page.goto(docs_app.url + "?conversation=docs&exchange=1")
    chip = page.locator("#ex-1 .tr-artifact").first
    expect(chip.locator(".tr-artifact-title")).to_have_text("Sales by region")
    expect(chip.locator(".tr-artifact-version")).to_have_text("v1")
    chip.locator("summary").first.click()
    rendered = chip.locator(".tr-artifact-rendered")
    expect(rendered.locator("h1")).to_have_text("Revenue")
    expect(rendered.locator("strong")).to_have_text("rose")
    expect(rendered.locator("script, img")).to_have_count(0)
    expect(rendered).to_contain_text("<script>")  # shown as text, never run
    settled(page)
    assert page.evaluate("() => [window.__doc_xss, window.__doc_xss2, window.__doc_xss3]") == [
        None,
        None,
        None,
    ]
    assert not [p for p in leak.paths if "doc-image" in p]  # no image fetched
    source = chip.locator(".tr-artifact-source")
    source.locator("summary").click()
    expect(source.locator("pre")).to_contain_text("title: Sales by region")


def test_an_edit_names_the_version_it_saved_and_opens_it(page, docs_app):
    page.goto(docs_app.url + "?conversation=docs&exchange=2")
    card = page.locator("#ex-2 .tr-tool-card")
    card.locator("summary").first.click()
    expect(card.locator(".tr-edit-saved")).to_contain_text("Saved version 2 of Sales by region")
    edited = card.locator(".tr-edit .tr-artifact")
    expect(edited).to_have_attribute("data-version", "2")
    edited.locator("summary").first.click()
    expect(edited.locator(".tr-artifact-rendered")).to_contain_text("Revenue fell in the north.")


def test_a_refused_document_gets_a_mark_and_no_chip(page, docs_app):
    page.goto(docs_app.url + "?conversation=docs&exchange=3")
    answer = page.locator("#ex-3 .tr-assistant")
    expect(answer.locator(".tr-artifact")).to_have_count(0)
    mark = answer.locator(".tr-artifact-rejected")
    expect(mark).to_contain_text("Document not saved")
    expect(mark).to_contain_text("no frontmatter")


def test_the_request_to_cite_is_folded_apart_from_the_tools_output(page, docs_app):
    page.goto(docs_app.url + "?conversation=docs&exchange=4")
    card = page.locator("#ex-4 .tr-tool-card")
    card.locator("summary").first.click()
    expect(card.locator("pre.tr-result")).to_have_text("12 plots")
    request = card.locator(".tr-tool-request")
    expect(request.locator("summary")).to_contain_text("Added by the assistant, not by the tool")
    expect(request.locator(".tr-request-text")).not_to_be_visible()  # folded
    request.locator("summary").click()
    expect(request.locator(".tr-request-text")).to_contain_text("With this most recent tool call")
