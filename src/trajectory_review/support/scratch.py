"""Folders of this process's own in the temporary folder (an uncached index's scratch,
the traces a Connect source downloads with the cache off).

Each is named by the process's pid: a process killed outright never runs its clean-up,
and the next one to make such a folder removes those of processes no longer alive.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

PREFIX = "trajectory-review-"
_NAMED = re.compile(re.escape(PREFIX) + r"(\d+)-")


def own_folder(kind: str = "") -> Path:
    """A fresh private folder named by this process (`kind`, say "connect-": what it
    holds), after removing those of dead processes."""
    root = Path(tempfile.gettempdir())
    for entry in root.glob(PREFIX + "*"):
        m = _NAMED.match(entry.name)
        if m and not _alive(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-{kind}"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True
