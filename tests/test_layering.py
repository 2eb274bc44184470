"""The package reads like the data flow (README, How it is built): a folder per stage, and no
stage imports a later one."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "trajectory_review"

# Each stage may import itself and the stages before it. Reviews stand beside the replay
# (they read neither); the rules judge replayed answers and weigh reviewers' verdicts;
# listing runs the rules; the app wires everything; the tools use it all.
STAGES = {
    "settings": 0,
    "support": 1,  # infrastructure: CSV cells, the worker pool; no trace concept in it
    "sources": 2,
    "index": 3,
    "model": 4,
    "replay": 5,
    "reviews": 5,
    "rules": 6,
    "listing": 7,
    "app": 8,
    "tools": 9,
}
# Outside the flow: the recorder runs in a commons chat app, not in the reviewer. It
# imports nothing of the reviewer, and nothing of the reviewer imports it (or commons).
APART = {"record"}


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "trajectory_review" else None


def imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            if node.module == "trajectory_review":
                out.extend((node.lineno, f"trajectory_review.{a.name}") for a in node.names)
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
    return out


def test_the_package_has_a_folder_per_stage_and_nothing_else():
    top = {p.name for p in PACKAGE.iterdir() if not p.name.startswith("__")}
    folders = {p for p in top if (PACKAGE / p).is_dir()}
    modules = {"settings"}
    assert folders == set(STAGES) - modules | APART
    assert top - folders == {f"{m}.py" for m in modules}


def test_no_stage_imports_a_later_one():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        here = rel.parts[0].removesuffix(".py")
        if here not in STAGES:
            continue  # the package's own __init__ / __main__
        for line, module in imports(path):
            there = stage_of(module)
            if there is None or there not in STAGES or there == here:
                continue
            if STAGES[there] >= STAGES[here]:
                upward.append(f"{rel}:{line} imports {module} ({here} -> {there})")
    assert upward == []


def test_no_relative_imports_hide_where_a_module_lives():
    relative = [
        f"{p.relative_to(PACKAGE)}:{n.lineno}"
        for p in PACKAGE.rglob("*.py")
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.ImportFrom) and n.level > 0
    ]
    assert relative == []


def test_the_recorder_and_the_reviewer_never_import_each_other():
    crossing = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        here = rel.parts[0].removesuffix(".py")
        for line, module in imports(path):
            there = stage_of(module)
            recorder_reads_reviewer = here in APART and there is not None and there != here
            reviewer_reads_recorder = here not in APART and (
                there in APART or module.split(".")[0] in ("commons", "chatlas", "opentelemetry")
            )
            if recorder_reads_reviewer or reviewer_reads_recorder:
                crossing.append(f"{rel}:{line} imports {module}")
    assert crossing == []
