"""Compile the replay (native.MODULES) with mypyc into the virtual environment (`make`).

The sources are compiled from a copy of the package in a scratch folder, so no .so file
ever lands beside them: one left there would shadow its .py file after an edit, and
nothing would say so. What is built goes to trajectory_review.native.build_dir(), with a
manifest naming the files and the digest of the sources they came from; the package uses
them only while that digest still matches (trajectory_review.native).

A machine that cannot compile (no C compiler, no Python headers) keeps running the
sources: this says so in one line and exits 0, unless --required (`make test`, whose
tests check that the replay runs compiled).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "trajectory_review"
sys.path.insert(0, str(ROOT / "src"))

os.environ["TRAJECTORY_NATIVE"] = "off"  # the sources, not a build about to be replaced
from trajectory_review import native  # noqa: E402


def build() -> Path:
    """Compile MODULES; the manifest's path once built (or already up to date)."""
    out = native.build_dir()
    manifest = out / native.MANIFEST
    if native.built(PACKAGE) is not None:
        return manifest
    digest = native.source_digest(PACKAGE)
    with tempfile.TemporaryDirectory(prefix="trajectory-review-native-") as tmp:
        work = Path(tmp)
        shutil.copytree(PACKAGE, work / "trajectory_review", ignore=_not_python)
        files = [str(Path(*m.split(".")).with_suffix(".py")) for m in native.MODULES]
        proc = subprocess.run(
            [sys.executable, "-m", "mypyc", "--ignore-missing-imports", *files],
            cwd=work,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
            errors = [ln for ln in lines if "error:" in ln.lower()]
            raise RuntimeError((errors or lines or ["mypyc failed"])[0])
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = {
            m: Path(*m.split(".")).with_name(m.rsplit(".", 1)[1] + suffix) for m in native.MODULES
        }
        # mypyc's shared runtime for the group: one top-level module named after it
        for lib in work.glob(f"*__mypyc{suffix}"):
            built[lib.name[: -len(suffix)]] = Path(lib.name)
        stage = out.with_name(out.name + ".new")
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        names = {}
        for module, rel in built.items():
            # named by module: two compiled modules may share a file name
            names[module] = module + suffix
            shutil.copy2(work / rel, stage / names[module])
        (stage / native.MANIFEST).write_text(
            json.dumps(
                {"sources": digest, "cache_tag": sys.implementation.cache_tag, "files": names},
                indent=2,
            )
        )
        shutil.rmtree(out, ignore_errors=True)
        stage.rename(out)  # whole or not at all: a reader never sees half a build
    return manifest


def missing() -> list[str]:
    """The Debian packages compiling needs and this machine lacks: the C compiler Python
    was built with, and Python's headers."""
    need = []
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        need.append("gcc")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        need.append("python3-dev")
    return need


def _not_python(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__" or n.endswith((".so", ".pyc"))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--required", action="store_true", help="fail when it cannot compile")
    p.add_argument("--missing", action="store_true", help="list the Debian packages it needs")
    args = p.parse_args()
    if args.missing:
        print(" ".join(missing()))
        return 0
    try:
        manifest = build()
    except (RuntimeError, OSError) as exc:
        print(
            f"build_native: could not compile the replay, it runs from its sources: {exc}",
            file=sys.stderr,
        )
        return 1 if args.required else 0
    print(f"build_native: the replay is compiled ({manifest.parent})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
