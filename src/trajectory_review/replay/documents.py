"""The documents of one conversation as the live chat kept them: a ledger of versions.

commons saves a document the model writes (`<artifact>` / `<commons-artifact>`) only when
its frontmatter passes commons' check: a YAML mapping of `title`, `subtitle`, `date` and
`format: html` only (`commons:`, `execute:`, `filters:` could run code or declare data;
missing or unterminated frontmatter is refused too). A refused document never gets a
chip; the user sees nothing, and commons reminds the model in the next turn. A saved one
is version 1 of its id; writing the tag again with the same id, or a successful
`edit_artifact` call (its result: "Saved version N of `id`."), adds a version. The chip
reads the frontmatter's `title` when there is one, else the tag's, and "· vN".

One home for this, used by the page, the export and the live projection alike: the
ledger says, for each document of each answer and each edit, what the user had.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from trajectory_review.model.trajectory import Conversation, Exchange, ToolUse
from trajectory_review.replay.citations import ArtifactSegment
from trajectory_review.replay.project import ExchangeReplay, replay_exchange

ALLOWED_KEYS = ("title", "subtitle", "date", "format")
EDIT_TOOL = "edit_artifact"
# A frontmatter this long is no frontmatter a person wrote: it is refused unread (YAML
# parsing is no place for a model's megabytes).
MAX_FRONTMATTER = 8_192
# "Saved version 3 of `sales-report`." — fixed shape, bounded widths: linear on any text
_SAVED = re.compile(r"Saved version (\d{1,9}) of `([^`\n]{1,200})`")
WHY = {
    "missing_frontmatter": "it has no frontmatter (--- … ---) at its start",
    "invalid_yaml": "its frontmatter is not a YAML mapping",
    "disallowed_key": "its frontmatter sets `{key}`, which commons does not allow",
    "disallowed_format": "its format is not html",
    "invalid_value": "its `{key}` is not text",
}


@dataclass(frozen=True)
class Checked:
    """commons' reading of a document: saved or why not, its frontmatter title, and the
    body a reader is shown (the frontmatter left out)."""

    saved: bool
    reason: str = ""  # in words, when not saved
    title: str | None = None
    body: str = ""


def check_document(source: str) -> Checked:
    text = source.lstrip("\n\r ")
    if not text.startswith("---"):
        return Checked(False, WHY["missing_frontmatter"], body=source)
    first_break = text.find("\n")
    end = text.find("\n---", first_break)
    if first_break < 0 or text[:first_break].strip() != "---" or end < 0:
        return Checked(False, WHY["missing_frontmatter"], body=source)
    header = text[first_break + 1 : end]
    after = text[end + 4 :]
    body = after[1:] if after.startswith("\n") else after
    if len(header) > MAX_FRONTMATTER:
        return Checked(False, WHY["invalid_yaml"], body=body)
    data = _yaml(header)
    if not isinstance(data, dict):
        return Checked(False, WHY["invalid_yaml"], body=body)
    for key, value in data.items():
        if key not in ALLOWED_KEYS:
            return Checked(False, WHY["disallowed_key"].format(key=str(key)[:40]), body=body)
        if key == "format" and value != "html":
            return Checked(False, WHY["disallowed_format"], body=body)
        if key in ("title", "subtitle") and not isinstance(value, str):
            return Checked(False, WHY["invalid_value"].format(key=key), body=body)
    title = data.get("title")
    return Checked(True, title=title if isinstance(title, str) and title.strip() else None,
                   body=body)  # fmt: skip


def _yaml(header: str) -> Any:
    import yaml

    if "&" in header and "*" in header:
        return None  # anchors and aliases: no frontmatter needs them, a bomb does
    try:
        return yaml.safe_load(header)
    except yaml.YAMLError:
        return None
    except RecursionError:
        return None


@dataclass(frozen=True)
class DocVersion:
    """One document as the user had it after one write or edit."""

    n: int  # its place in the conversation's ledger: the page's anchor for it
    id: str
    exchange: int
    saved: bool
    version: int | None  # None when commons did not save it
    title: str  # as the chip showed it (or the tag's, for one not saved)
    source: str  # the document's whole text, frontmatter included
    body: str  # what a reader is shown: the text after the frontmatter
    reason: str = ""  # why it was not saved, in words
    edited: bool = False  # made by edit_artifact, not by writing the tag

    @property
    def chip(self) -> str:
        return f"{self.title} · v{self.version}" if self.saved else self.title

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "version": self.version,
            "saved": self.saved,
            "reason": self.reason or None,
            "body": self.source,
        }


@dataclass
class Ledger:
    """Per answer, its documents in order; per edit_artifact call, the version it made."""

    written: dict[int, list[DocVersion]] = field(default_factory=dict)  # exchange -> docs
    edits: dict[tuple[int, int], DocVersion] = field(default_factory=dict)  # (ex, tool i)
    _latest: dict[str, DocVersion] = field(default_factory=dict)
    _count: int = 0

    def _add(self, **kw: Any) -> DocVersion:
        self._count += 1
        doc = DocVersion(n=self._count, **kw)
        if doc.saved:
            self._latest[doc.id] = doc
        return doc

    def write(self, exchange: int, artifact: ArtifactSegment) -> DocVersion:
        checked = check_document(artifact.body)
        before = self._latest.get(artifact.id)
        doc = self._add(
            id=artifact.id,
            exchange=exchange,
            saved=checked.saved,
            version=((before.version or 0) + 1) if checked.saved and before else
            (1 if checked.saved else None),
            title=checked.title or artifact.title,
            source=artifact.body,
            body=checked.body,
            reason=checked.reason,
        )  # fmt: skip
        self.written.setdefault(exchange, []).append(doc)
        return doc

    def edit(self, exchange: int, i: int, tool: ToolUse) -> DocVersion | None:
        """The version an edit_artifact call saved, as its result says; None for an edit
        commons refused (its result says why, and the card shows it)."""
        text = tool.result if isinstance(tool.result, str) else ""
        m = _SAVED.match(text.lstrip())
        if tool.name != EDIT_TOOL or m is None:
            return None
        version, doc_id = int(m.group(1)), m.group(2)
        before = self._latest.get(doc_id)
        source = _applied(before.source, tool.arguments) if before is not None else None
        checked = check_document(source) if source is not None else Checked(True)
        doc = self._add(
            id=doc_id,
            exchange=exchange,
            saved=True,
            version=version,
            title=checked.title or (before.title if before else doc_id),
            source=source if source is not None else "",
            body=checked.body if source is not None else "",
            reason="" if source is not None else "the edited text was not recorded",
            edited=True,
        )
        self.edits[(exchange, i)] = doc
        return doc


def _has_documents(ex: Exchange) -> bool:
    return "artifact" in ex.answer_raw.lower() or any(t.name == EDIT_TOOL for t in ex.tools())


def _applied(source: str, arguments: Any) -> str | None:
    """The edit commons made (old_string → new_string, literally; every match with
    replace_all), or None when the arguments do not apply to the version known."""
    if not isinstance(arguments, dict):
        return None
    old, new = arguments.get("old_string"), arguments.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str) or not old:
        return None
    count = source.count(old)
    if count == 0 or (count > 1 and not arguments.get("replace_all")):
        return None
    return source.replace(old, new)


def exchange_events(ex: Exchange, rep: ExchangeReplay) -> list[tuple[str, int, Any]]:
    """The exchange's documents and edits in the order the user met them: each answer
    run's documents where the run starts, each tool's result where it came back."""
    starts = ex.answer_run_starts()
    events: list[tuple[int, int, str, int, Any]] = []
    for run_no, run in enumerate(rep.runs):
        at = starts[run_no] if run_no < len(starts) else len(ex.messages)
        for k, seg in enumerate(s for s in run if isinstance(s, ArtifactSegment)):
            events.append((at, k, "write", run_no, seg))
    answered = ex.result_positions()
    for i, tool in enumerate(ex.tools()):
        events.append((answered.get(i, len(ex.messages)), -1, "edit", i, tool))
    events.sort(key=lambda e: (e[0], e[1]))
    return [(kind, i, item) for _at, _k, kind, i, item in events]


def ledger(conv: Conversation, upto: int | None = None) -> Ledger:
    """The conversation's documents up to answer `upto` (all when None). An answer that
    names no document and calls no edit is skipped unreplayed: a page of a conversation
    of thousands of answers pays only for those that have documents."""
    out = Ledger()
    for ex in conv.exchanges:
        if upto is not None and ex.index > upto:
            break
        if not _has_documents(ex):
            continue
        for kind, i, item in exchange_events(ex, replay_exchange(ex)):
            if kind == "write":
                out.write(ex.index, item)
            else:
                out.edit(ex.index, i, item)
    return out
