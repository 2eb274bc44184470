"""Deployment: requirements in step with pyproject, and a Connect manifest that works."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_requirements_txt_pins_every_runtime_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(d) for d in project["dependencies"]}
    pinned = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            assert "==" in line, f"not pinned: {line}"
            pinned[_name(line)] = line
    assert wanted == set(pinned), wanted ^ set(pinned)


def test_python_version_file_names_a_supported_python():
    version = (ROOT / ".python-version").read_text().strip()
    assert re.fullmatch(r"3\.(1[1-9])(\.\d+)?", version)


def test_rsconnect_writes_a_python_shiny_manifest_with_the_traces(tmp_path):
    bundle = tmp_path / "bundle"
    ignore = shutil.ignore_patterns(
        ".venv",
        ".git",
        "bench-data",
        "__pycache__",
        ".pytest_cache",
        ".ruff_cache",
        "*.reviews.jsonl",
        "test-results",
        ".hypothesis",
    )
    shutil.copytree(ROOT, bundle, ignore=ignore)
    rsconnect = Path(sys.executable).parent / "rsconnect"
    proc = subprocess.run(
        [str(rsconnect), "write-manifest", "shiny", str(bundle), "-x", "tests", "--overwrite"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["metadata"]["appmode"] == "python-shiny"
    assert manifest["metadata"]["entrypoint"] == "app"
    files = set(manifest["files"])
    assert "app.py" in files and "requirements.txt" in files
    assert any(f.startswith("traces/trace-") for f in files)
    assert "static/app.css" in files and "src/trajectory_review/ui/app.py" in files
    assert not any(f.startswith("tests/") for f in files)
