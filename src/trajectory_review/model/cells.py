"""CSV cells that a spreadsheet will not run.

Every CSV the app or the command line writes holds text from traces and reviewers
(questions, conversation ids, notes). A cell starting with `=`, `+`, `-`, `@`, a tab or a
carriage return is a formula to Excel, LibreOffice and Sheets (CSV injection: a question
`=HYPERLINK(...)` becomes a live link, `=cmd|...` worse). Such a cell gets a leading `'`,
which spreadsheets show as text and hide.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_text(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(list(header))
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return buf.getvalue()
