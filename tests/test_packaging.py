"""Deployment: requirements in step with pyproject, and a Connect manifest that works."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from trajectory_review import __version__

ROOT = Path(__file__).resolve().parents[1]
# what a checkout holds that is not the project: never copied
NOT_THE_PROJECT = (".venv", ".venv-record", ".git", "build", "bench-data", "__pycache__",
                   "*.egg-info", ".pytest_cache", ".ruff_cache")  # fmt: skip


def checkout_copy(tmp_path: Path) -> Path:
    """The project's files in a scratch folder: building a bundle or a wheel writes
    `build/` and `*.egg-info` beside the sources, and a test must leave the checkout as
    it found it. The copy keeps modification times, so make sees the venv as current."""
    import shutil

    copy = tmp_path / "checkout"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(*NOT_THE_PROJECT), symlinks=True)
    return copy


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


def test_the_record_extra_is_pinned_where_its_tests_install_it():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(d) for d in extra["optional-dependencies"]["record"]}
    lines = (ROOT / "requirements-record.txt").read_text().splitlines()
    pinned = {_name(line) for line in lines if "==" in line.split("#", 1)[0]}
    assert wanted <= pinned, wanted - pinned
    # and the reviewer's own venv never gets them (shinychat would import chatlas)
    dev = (ROOT / "requirements-dev.txt").read_text()
    assert not any(re.search(rf"^{name}==", dev, re.M | re.I) for name in wanted)


def test_python_version_file_names_a_supported_python():
    version = (ROOT / ".python-version").read_text().strip()
    assert re.fullmatch(r"3\.(1[1-9])(\.\d+)?", version)


def test_the_readme_deploy_command_bundles_the_app_and_nothing_private(tmp_path):
    readme = (ROOT / "README.md").read_text() + (ROOT / "docs" / "connect.md").read_text()
    command = "make connect-bundle"
    assert command in readme and "rsconnect deploy manifest build/connect/manifest.json" in readme
    work = checkout_copy(tmp_path)
    # what a working tree holds after reviewing and testing locally
    private = [
        work / "traces.reviews.jsonl",
        work / "reviews.jsonl",
        work / "traces" / "team.reviews.jsonl",
        work / ".trajectory-cache" / "index-0123.duckdb",
        work / "bench-data" / "corpus" / "trace-1.jsonl",
        work / "src" / "trajectory_review" / "__pycache__" / "stale.cpython-311.pyc",
    ]
    for p in private:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text('{"author": "a reviewer", "text": "a private note"}\n')
    proc = subprocess.run(
        # -o: never reinstall this venv from the copy, even when the copy's pyproject is
        # newer than the venv's stamp (it would point the venv's editable install here)
        [*command.split(), f"VENV={ROOT / '.venv'}", "-o", str(ROOT / ".venv" / ".installed")],
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = json.loads((work / "build" / "connect" / "manifest.json").read_text())
    assert manifest["metadata"]["appmode"] == "python-shiny"
    assert manifest["metadata"]["entrypoint"] == "app"
    files = set(manifest["files"])
    assert {"app.py", "requirements.txt", ".python-version"} <= files
    assert "static/app.css" in files and "static/icons/trusted.svg" in files
    assert "src/trajectory_review/app/server.py" in files
    # the benchmark and the generator stay in the checkout
    assert not any("bench" in f or f.endswith("generate.py") for f in files), files
    assert any(f.startswith("traces/trace-") for f in files)
    for f in files:
        assert not f.startswith(
            ("tests/", "docs/", "scripts/", "bench-data/", ".venv/", "benchmarks/")
        ), f
        assert not f.endswith("reviews.jsonl") and ".duckdb" not in f, f
        assert "__pycache__" not in f, f
        assert ".trajectory-cache" not in f, f


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory) -> tuple[Path, Path]:
    """The wheel `pip wheel` builds from a copy of the checkout, and where it was
    installed (`pip install --target`)."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheels, target = tmp / "wheels", tmp / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(wheels), str(checkout_copy(tmp))],
        capture_output=True, text=True,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("*.whl")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    return wheel, target


def test_an_installed_package_serves_its_assets_and_knows_its_version(installed_wheel, tmp_path):
    wheel, target = installed_wheel
    env = {**os.environ, "PYTHONPATH": str(target)}
    version = subprocess.run(
        [sys.executable, "-m", "trajectory_review", "--version"],
        cwd=tmp_path, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert version.stdout.strip() == f"trajectory-review {__version__}"
    where = subprocess.run(
        [sys.executable, "-c", "from trajectory_review.app.data import static_dir; "
         "d = static_dir(); assert (d / 'app.css').exists() and (d / 'icons' / "
         "'trusted.svg').exists(); print(d)"],
        cwd=tmp_path, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(target)  # the installed copy
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
    assert "trajectory_review/app/static/icons/trusted.svg" in names
    assert not any("bench" in n or n.endswith("generate.py") for n in names), names


def _without_the_checkout(tmp_path: Path) -> Path:
    """This venv's packages minus the project's own (the editable reviewer and the
    benchmarks' distribution): what a machine that installed only the wheel has."""
    import sysconfig

    site = Path(sysconfig.get_paths()["purelib"])
    kept = tmp_path / "site-packages"
    kept.mkdir()
    for entry in site.iterdir():
        if not entry.name.startswith(("trajectory_review", "__editable__")):
            (kept / entry.name).symlink_to(entry)
    return kept


def test_an_installed_wheel_says_bench_and_generate_come_with_a_checkout(installed_wheel, tmp_path):
    _, target = installed_wheel
    path = f"{target}{os.pathsep}{_without_the_checkout(tmp_path)}"
    env = {**os.environ, "PYTHONPATH": path}
    for command in (["bench", "--yes"], ["generate", "out"]):
        # -S: no .pth files, so nothing of the checkout is on the path
        proc = subprocess.run(
            [sys.executable, "-S", "-m", "trajectory_review", *command],
            cwd=tmp_path, capture_output=True, text=True, env=env,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "comes with a checkout" in proc.stderr
    assert not (tmp_path / "out").exists()
