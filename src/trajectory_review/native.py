"""The replay compiled to C with mypyc, used only when built from exactly these sources.

Replaying and judging every answer is pure Python on the path of every cold start and
every lint: compiled, building conversations (parsing histories, structural matching)
takes 40% less time than from the sources (0.43 s of CPU against 0.70 for 10,000
answers), and a lint of 5,000 conversations a sixth less (docs/performance-log.md).
The .py files stay the program: the compiled modules are an accelerator `make` builds
into the virtual environment (scripts/build_native.py), and this finder serves them in
place of the sources only while every source they were built from is unchanged. A
module edited since falls back to its source, all of them together (compiled modules
call one another directly, so half a set cannot be mixed with the other half's
sources), and a host that never built them (Posit Connect, `pip install`) runs the
sources. TRAJECTORY_NATIVE=off runs the sources anyway.

What compiling asks of the compiled modules' code (mypyc compiles classes to C structs):
- Values kept once computed (a message's signature) are declared fields, not entries in
  `__dict__`, which a compiled class does not have. They take their default in
  `__init__`: a field with init=False is left unset by compiled code.
- Their dataclasses are hashable as frozen ones are (unsafe_hash), but not frozen:
  nothing changes one once it is built but those kept values. A compiled frozen
  dataclass cannot be unpickled (its own __setattr__ refuses the fields), so it could
  never cross to a worker process. And mypyc compiles a frozen dataclass's `__init__` as
  the Python one `dataclasses` writes (object.__setattr__ per field): building
  conversations took 0.62 s compiled frozen, 0.47 s not (10,000 answers). Run from the
  sources, a frozen dataclass's __init__ was 2.4 us for a chat row's 19 fields, 0.3 not.
- No compiled class subclasses a built-in type (the rules' Patterns holds its tuple).
- Type hints hold: mypy checks the modules as they are compiled, and compiled code checks
  the types of what crosses its functions' boundaries.

Read at the package's import, before any of its modules: it imports only the settings,
which import nothing of the package.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from trajectory_review import settings

# The modules compiled: what replaying and judging an answer runs through, from the
# index's rows to the verdict of the reply rules. Building conversations gains most;
# the replay of citations and the rules less, their time being mostly in regular
# expressions, already C.
MODULES = (
    "trajectory_review.index.rows",
    "trajectory_review.model.messages",
    "trajectory_review.model.trajectory",
    "trajectory_review.model.spans",
    "trajectory_review.model.matching",
    "trajectory_review.replay.markup",
    "trajectory_review.replay.citations",
    "trajectory_review.replay.project",
    "trajectory_review.model.provenance",
    "trajectory_review.replay.resolvers",
    "trajectory_review.rules.registry",
    "trajectory_review.rules.checks",
    "trajectory_review.rules.lint",
    "trajectory_review.rules.qa",
)
MANIFEST = "manifest.json"


def build_dir() -> Path:
    """Where `make` puts them: inside the virtual environment, whose Python they were
    compiled for (a new venv or another interpreter never picks up a stale build)."""
    return Path(sys.prefix) / "trajectory-review-native"


def source_digest(package_root: Path) -> str:
    """One digest of every compiled module's source, as the build records it."""
    h = hashlib.sha256()
    for name in MODULES:
        rel = Path(*name.split(".")[1:]).with_suffix(".py")
        h.update(name.encode() + b"\0" + (package_root / rel).read_bytes() + b"\0")
    return h.hexdigest()


class _Finder(importlib.abc.MetaPathFinder):
    """Serves each compiled module (and mypyc's shared runtime module) from its file."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        f = self.files.get(fullname)
        if f is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(f))
        return importlib.util.spec_from_file_location(fullname, f, loader=loader)


_installed: _Finder | None = None


def built(package_root: Path) -> dict[str, Path] | None:
    """The compiled modules' files (module name -> file) when the build in build_dir()
    was made by this Python from exactly these sources; None at any doubt (no build,
    another Python, a file missing, an unreadable manifest)."""
    where = build_dir()
    try:
        info = json.loads((where / MANIFEST).read_text())
        if info.get("cache_tag") != sys.implementation.cache_tag:
            return None
        if info.get("sources") != source_digest(package_root):
            return None
        files = {name: where / rel for name, rel in info["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if set(MODULES) - set(files) or not all(f.is_file() for f in files.values()):
        return None
    return files


def install(package_root: Path) -> bool:
    """Serve the compiled modules when they match the sources; True when they do. Else
    the sources: this runs as the package is imported and must never stop it."""
    global _installed
    if _installed is not None:
        return True
    files = built(package_root) if settings.native() else None
    if files is None:
        return False
    _installed = _Finder(files)
    sys.meta_path.insert(0, _installed)
    return True


def active() -> bool:
    """Whether the replay runs compiled in this process (the bench reports it)."""
    return _installed is not None
