"""Files and functions stay short enough to read, or say why they are not.

A module over 400 lines names its reason in its docstring, a function over 80 lines (its
decorators included) in a comment on the line above it, both starting "Long on purpose:".
Without the check, length crept back in unremarked: `listing_server` had grown to 251
lines before anyone asked what it held."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "benchmarks", "scripts", "tests", "examples")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80
REASON = "Long on purpose:"


def python_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in FOLDERS:
        files += sorted((ROOT / folder).rglob("*.py"))
    return [f for f in files if "__pycache__" not in f.parts]


def long_without_reason(source: str) -> list[str]:
    """What in `source` is over its length without a reason: "file (N lines)" and
    "name (line L, N lines)" for each function."""
    lines = source.splitlines()
    tree = ast.parse(source)
    found = []
    if len(lines) > MAX_FILE_LINES and REASON not in (ast.get_docstring(tree) or ""):
        found.append(f"file ({len(lines)} lines)")
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        length = (node.end_lineno or node.lineno) - first + 1
        if length > MAX_FUNCTION_LINES and not reason_above(lines, first):
            found.append(f"{node.name} (line {node.lineno}, {length} lines)")
    return found


def reason_above(lines: list[str], first: int) -> bool:
    """Whether the comment block right above line `first` (1-based) holds the reason."""
    at = first - 2
    while at >= 0 and lines[at].strip().startswith("#"):
        if lines[at].strip().startswith(f"# {REASON}"):
            return True
        at -= 1
    return False


def test_long_files_and_functions_say_why_they_are_long():
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in python_files()
        if (found := long_without_reason(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_size_check_finds_a_long_function_and_a_long_file_without_a_reason():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    long_function = f"def f():\n{body}\n"
    assert long_without_reason(long_function) == [f"f (line 1, {MAX_FUNCTION_LINES + 1} lines)"]
    assert long_without_reason(f"# {REASON} a table.\n{long_function}") == []
    # the reason must sit on the function, not anywhere in the file
    assert long_without_reason(f"# {REASON} a table.\n\n{long_function}") != []
    long_file = "x = 1\n" * (MAX_FILE_LINES + 1)
    assert long_without_reason(long_file) == [f"file ({MAX_FILE_LINES + 1} lines)"]
    assert long_without_reason(f'"""A table.\n\n{REASON} rows."""\n{long_file}') == []
