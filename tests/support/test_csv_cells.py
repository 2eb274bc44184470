"""Every CSV is one record a row, and no cell of it runs as a spreadsheet formula, whatever
a trace or a reviewer put in it (issue #34 §5): a carriage return, a formula after
blanks, quotes, a no-break space or a line break, and the full-width forms."""

from __future__ import annotations

import csv
import io
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fixtures import A, Q, Recorder
from trajectory_review.reviews.log import ReviewEvent, ReviewLog
from trajectory_review.support.cells import csv_text
from trajectory_review.tools.cli import main

HOSTILE = [
    "a\r=1+1",
    "a\r@SUM(A1:A9)",
    "x\n=2+2",
    " =1+1",
    '"=1+1',
    "'=1+1",
    "\u00a0=1+1",
    "\n=1+1",
    "\u200b=1+1",
    "\u202e=1+1",
    "\uff1d1+1",
    "\uff20SUM(A1)",
    "\ufe661+1",
    "\u22121",
    "\t=1",
    "\r\n+1",
]

# text a trace or a reviewer could write: formula starts, blanks, quotes, line breaks
_PIECES = st.sampled_from(
    ["=", "+", "-", "@", "\uff1d", "\uff0b", "\r", "\n", "\r\n", " ", "\u00a0", '"', "'", ",",
     "\u200b", "\u202e", "\t", "SUM(A1)", "x", "1"]
)  # fmt: skip
HOSTILE_TEXT = st.one_of(st.text(), st.lists(_PIECES, max_size=12).map("".join))


def parsed(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def inert(cell: str) -> bool:
    """A spreadsheet runs a cell whose first visible character (after blanks, quotes and
    invisible marks) is a formula sign in any width; a leading ' makes it text."""
    if cell.startswith("'"):
        return True
    hidden = ("Cc", "Cf")
    visible = [
        c for c in cell if not (c.isspace() or c in "\"'`" or unicodedata.category(c) in hidden)
    ]
    return not visible or unicodedata.normalize("NFKC", visible[0]) not in "=+-@\u2212"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(HOSTILE_TEXT, min_size=1, max_size=4), max_size=5))
def test_every_record_is_one_row_and_no_cell_runs(rows):
    width = max((len(r) for r in rows), default=1)
    rows = [r + [""] * (width - len(r)) for r in rows]
    out = parsed(csv_text([f"c{i}" for i in range(width)], rows))
    assert len(out) == len(rows) + 1
    for written, read in zip(rows, out[1:], strict=True):
        assert len(read) == width
        for original, cell in zip(written, read, strict=True):
            assert cell in (original, "'" + original)
            assert inert(cell)


def test_hostile_questions_and_notes_stay_one_row_in_every_csv(tmp_path, capsys):
    r = Recorder()
    for n, text in enumerate(HOSTILE):
        r.turn(f"c{n}", [Q(text), A("An answer long enough to be an answer, plainly.")], tag="A")
    path = str(r.write(tmp_path / "t.jsonl"))
    assert main(["export", path, "--format", "csv"]) == 0
    rows = parsed(capsys.readouterr().out)
    assert len(rows) == len(HOSTILE) + 1
    questions = {row[0]: row[3] for row in rows[1:]}
    for n, text in enumerate(HOSTILE):
        assert questions[f"c{n}"] in (text, "'" + text)
    assert all(inert(c) for row in rows for c in row)

    log = ReviewLog(tmp_path / "r.jsonl")
    for text in HOSTILE:
        log.append(ReviewEvent("note", "c1", "ann" + text, 1, text))
    rows = parsed(log.to_csv())
    assert len(rows) == len(HOSTILE) + 1
    assert all(inert(c) for row in rows for c in row)
