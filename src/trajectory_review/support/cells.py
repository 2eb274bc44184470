"""CSV cells that a spreadsheet will not run, one record to a row.

Every CSV the app or the command line writes (the list, the review events, rule quality,
`export --format csv`) goes through `csv_text`: it holds text from traces and reviewers
(questions, conversation ids, notes, rule names from the log).

- A cell whose first visible character is `=`, `+`, `-` or `@` (or their full-width and
  small forms, `＝`, `﹦`, a minus sign) is a formula to Excel, LibreOffice and Sheets, also
  after leading spaces, quotes, a no-break space or a line break, which they skip (CSV
  injection: `=HYPERLINK(...)` becomes a live link, `=cmd|...` worse). Such a cell gets a
  leading `'`, which spreadsheets show as text and hide.
- Rows end in CRLF, so the writer quotes any cell holding a CR or LF: with `\\n` line ends
  Python's writer left a lone CR unquoted, a reader split the record there, and the text
  after the CR became a cell of its own, formula included.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Iterable
from typing import Any

_FORMULA = frozenset("=+-@\u2212")  # U+2212 MINUS SIGN: LibreOffice reads it as one
_QUOTES = frozenset("\"'`\u00ab\u00bb\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f")


def _skipped(ch: str) -> bool:
    """Characters a spreadsheet steps over before it decides a cell is a formula: blanks
    of every kind, quotes, and invisible format characters (zero-width, bidi marks)."""
    return ch.isspace() or ch in _QUOTES or unicodedata.category(ch) in ("Cc", "Cf")


def starts_formula(text: str) -> bool:
    for ch in text:  # linear: stops at the first visible character
        if _skipped(ch):
            continue
        return ch in _FORMULA or unicodedata.normalize("NFKC", ch) in _FORMULA
    return False


def csv_cell(value: Any) -> Any:
    if isinstance(value, str) and (value[:1] in ("\t", "\r", "\n") or starts_formula(value)):
        return "'" + value
    return value


def csv_text(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow([csv_cell(v) for v in header])
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return buf.getvalue()
