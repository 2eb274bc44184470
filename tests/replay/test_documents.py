"""The document ledger (issue #46): which documents commons saved, their versions across a
conversation, the titles their chips showed, and the edits that made new versions."""

from __future__ import annotations

import json

import pytest

from tests.fixtures import CALL, RESULT, A, Q, Recorder
from trajectory_review.model.citation_request import CITATION_REQUEST
from trajectory_review.replay.documents import check_document, ledger
from trajectory_review.rules.judged import judge_answer


@pytest.mark.parametrize(
    ("source", "saved", "title", "why"),
    [
        ("---\ntitle: Sales\nsubtitle: By region\ndate: 2026-10-07\nformat: html\n---\n\nB.\n",
         True, "Sales", ""),
        ("\n\n---\ntitle: Sales\n---\nBody.\n", True, "Sales", ""),
        ("---\nsubtitle: only\n---\nBody.\n", True, None, ""),
        ("# Sales\n\nBody.\n", False, None, "no frontmatter"),
        ("---\ntitle: Sales\n\nBody.\n", False, None, "no frontmatter"),
        ("---\ntitle: [Sales\n---\nBody.\n", False, None, "not a YAML mapping"),
        ("---\n- title\n---\nBody.\n", False, None, "not a YAML mapping"),
        ("---\ntitle: S\nfilters:\n  - evil.lua\n---\nB.\n", False, None, "`filters`"),
        ("---\ntitle: S\nexecute:\n  echo: false\n---\nB.\n", False, None, "`execute`"),
        ("---\ntitle: S\ncommons:\n  inputs: {}\n---\nB.\n", False, None, "`commons`"),
        ("---\ntitle: S\nformat: pdf\n---\nB.\n", False, None, "format is not html"),
        ("---\ntitle: S\nformat:\n  html: {}\n---\nB.\n", False, None, "format is not html"),
        ("---\ntitle:\n  text: Sales\n---\nBody.\n", False, None, "`title` is not text"),
        ("---\na: &x [1]\nb: *x\n---\nB.\n", False, None, "not a YAML mapping"),
    ],
)  # fmt: skip
def test_a_document_is_saved_only_when_commons_would_save_it(source, saved, title, why):
    checked = check_document(source)
    assert (checked.saved, checked.title) == (saved, title)
    assert why in checked.reason


DOC = "---\ntitle: Sales by region\n---\n\nRevenue rose in the north.\n"


def _conversation(read):
    r = Recorder()
    h = [
        Q("Write the report."),
        A(f'Here.\n<artifact id="sales" title="Tag title">{DOC}</artifact>'),
    ]
    h += [
        Q("Make it say fell."),
        CALL("e1", "edit_artifact", {"id": "sales", "old_string": "rose", "new_string": "fell"}),
        RESULT("e1", "Saved version 2 of `sales`."),
        A("Done: it says fell now."),
    ]
    h += [
        Q("Rewrite it."),
        A(
            f'<artifact id="sales" title="x">{DOC.replace("north", "south")}'
            '</artifact>\n<artifact id="bad" title="Bad one">no frontmatter'
            "</artifact>"
        ),
    ]
    h += [
        Q("Query plots."),
        CALL("q1", "run_sql", {"sql": "select 1"}),
        RESULT("q1", "12 plots\n\n" + CITATION_REQUEST),
        A("There are 12 plots here."),
    ]
    r.turn("docs", h, tag="C")
    return read(r).conversation("docs")


def test_versions_follow_rewrites_and_edits_across_the_conversation(read):
    conv = _conversation(read)
    docs = ledger(conv)
    first = docs.written[1][0]
    assert (first.chip, first.saved, first.version) == ("Sales by region · v1", True, 1)
    edit = docs.edits[(2, 0)]
    assert (edit.version, edit.id, edit.edited) == (2, "sales", True)
    assert "Revenue fell in the north." in edit.body and edit.title == "Sales by region"
    rewrite, bad = docs.written[3]
    assert (rewrite.version, rewrite.title) == (3, "Sales by region")
    assert (bad.saved, bad.version, bad.title) == (False, None, "Bad one")
    assert "no frontmatter" in bad.reason


def test_the_request_to_cite_is_split_off_the_tool_result_and_is_no_evidence(read):
    ex = _conversation(read).exchanges[3]
    (tool,) = ex.tools()
    assert tool.result == "12 plots" and tool.request == CITATION_REQUEST
    assert [s.text for s in judge_answer(ex, None).sources] == ["12 plots"]


def test_export_says_each_documents_version_title_and_whether_it_was_saved(read, tmp_path,
                                                                           capsys):  # fmt: skip
    from trajectory_review.tools.cli import main

    _conversation(read)
    assert main(["export", str(tmp_path / "trace-1.jsonl")]) == 0
    doc = json.loads(capsys.readouterr().out)
    (conv,) = doc["conversations"]
    arts = [a for ex in conv["exchanges"] for a in ex["artifacts"]]
    assert [(a["id"], a["title"], a["version"], a["saved"]) for a in arts] == [
        ("sales", "Sales by region", 1, True), ("sales", "Sales by region", 3, True),
        ("bad", "Bad one", None, False),
    ]  # fmt: skip
    assert "no frontmatter" in arts[2]["reason"] and arts[0]["reason"] is None


def _documents(doc: dict) -> list[tuple]:
    (conv,) = doc["conversations"]
    return [
        (ex["index"], a["id"], a["title"], a["version"], a["saved"],
         [t["result"] for t in ex["tools"]])
        for ex in conv["exchanges"]
        for a in (ex["artifacts"] or [{"id": None, "title": None, "version": None,
                                       "saved": None}])
    ]  # fmt: skip


def _export(capsys, *sources: str) -> dict:
    from trajectory_review.tools.cli import main

    assert main(["export", *sources]) == 0
    return json.loads(capsys.readouterr().out)


def test_connect_and_clickhouse_keep_the_same_ledger(read, tmp_path, capsys, monkeypatch, store):
    from tests.fixtures import span_lines
    from tests.sources.connect_standin import ConnectStandIn
    from trajectory_review.sources import connect_api
    from trajectory_review.tools.load import load

    _conversation(read)
    files = _documents(_export(capsys, str(tmp_path / "trace-1.jsonl")))
    assert ("12 plots",) in {tuple(x[5]) for x in files}  # the request left out everywhere
    load([str(tmp_path / "trace-1.jsonl")], store)
    assert _documents(_export(capsys, store)) == files
    server = ConnectStandIn()
    try:
        monkeypatch.setenv("CONNECT_SERVER", server.url)
        monkeypatch.setenv("CONNECT_API_KEY", server.key)
        monkeypatch.setenv("TRAJECTORY_CACHE", str(tmp_path / "cache"))
        monkeypatch.setattr(connect_api.RetrySettings, "first_wait", 0.01)
        guid = "0f3c2a1e-5b7d-4c9e-8a6f-1d2b3c4d5e70"
        server.add(guid, span_lines(tmp_path))
        assert _documents(_export(capsys, f"connect:{guid}")) == files
    finally:
        server.stop()
