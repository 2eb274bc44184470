"""An on-disk cache of the built index and answer catalog, so a restart is instant.

Keyed by the trace files (path, size, modification time) and by the package's own source:
any new span, rotated file or code change builds afresh. Entries are written under a
temporary name and renamed into place, so concurrent starts never read a half-written one.
`TRAJECTORY_CACHE=off` disables it; an unwritable cache directory silently does too.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from trajectory_review.sources.files import snapshot

_PACKAGE = Path(__file__).resolve().parents[1]
NOT_BUILDING = ("app", "tools")


def _code_hash() -> str:
    h = hashlib.sha256()
    for p in sorted(_PACKAGE.rglob("*")):
        # what an index or a catalog is built by; the app and the tools are not
        if p.suffix in (".py", ".toml") and p.relative_to(_PACKAGE).parts[0] not in NOT_BUILDING:
            h.update(p.relative_to(_PACKAGE).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def files_key(files: Sequence[Path]) -> str:
    h = hashlib.sha256(_code_hash().encode())
    for path, size, mtime_ns in snapshot(files):
        h.update(f"{path}\0{size}\0{mtime_ns}\n".encode())
    return h.hexdigest()[:24]


def text_key(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


@contextmanager
def building(cdir: Path, name: str) -> Iterator[None]:
    """Held while one process builds an entry. Several processes of one app (Posit Connect
    may start more than one) start at once on the same cache: the first builds, the
    others wait here and then find the entry built, instead of each building its own."""
    locks = cdir / "locks"
    locks.mkdir(exist_ok=True)
    with open(locks / f"{name}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def publish(tmp: Path, final: Path) -> None:
    """Move a finished entry into place atomically (a concurrent writer may win; fine)."""
    os.replace(tmp, final)


def prune(cdir: Path, kind: str, keep: int = 2) -> None:
    """Keep the newest `keep` entries of a kind ("index", "answers"); remove the rest.

    Traces that grow (a live trace-latest.jsonl) make a new entry on every rebuild, and
    an index entry is as big as the histories it holds. A process still reading a removed
    entry keeps its open file (POSIX); a parquet catalog is read whole when loaded.
    """
    entries: dict[str, list[Path]] = {}
    for f in cdir.glob(f"{kind}-*"):
        if ".tmp" in f.suffixes or f.name.endswith(".tmp"):
            continue  # a writer's unfinished entry
        entries.setdefault(f.name.split(".", 1)[0], []).append(f)

    def newest(files: list[Path]) -> float:
        return max((f.stat().st_mtime for f in files if f.exists()), default=0.0)

    ranked = sorted(entries.values(), key=newest, reverse=True)
    for files in ranked[keep:]:
        for f in files:
            try:
                f.unlink()
            except OSError:
                pass
