"""What a reviewer's session costs the server before its first page is drawn.

Shiny names an unnamed `reactive.value` by walking the whole call stack with
`inspect.stack()`, which reads the source of every frame: that was about half of the
server's work for each new session (docs/performance-log.md, "a reviewer's session"). Every
value the app makes is given its name instead."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "trajectory_review"


def unnamed_values(source: str) -> list[int]:
    """The lines of `source` that make a reactive value without a name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        called = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
        owner = getattr(callee.value, "id", "") if isinstance(callee, ast.Attribute) else None
        if called in ("value", "Value") and owner in (None, "reactive"):
            if not any(k.arg == "name" for k in node.keywords):
                found.append(node.lineno)
    return found


def test_every_reactive_value_is_named_so_a_new_session_never_walks_the_stack():
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in unnamed_values(path.read_text())
    ]
    assert found == [], "reactive.value(...) without name=: " + ", ".join(found)


def test_the_check_finds_an_unnamed_value_imported_either_way():
    source = (
        "from shiny import reactive\n"
        "from shiny.reactive import Value\n"
        "a = reactive.value(1)\n"
        "b = Value(2)\n"
        "c = reactive.value(3, name='c')\n"
        "d = row.value(4)\n"
    )
    assert unnamed_values(source) == [3, 4]
