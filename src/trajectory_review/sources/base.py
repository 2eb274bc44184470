"""What every trace source is: a place OTLP/JSON lines come from.

A source turns a location the user wrote (a path, `connect:<guid>`, …) into trace files
on this machine, bringing any remote copy up to date first; the index reads those files
and never learns where spans came from. A new kind of source is one module with a class
following `TraceSource`, named in `KINDS` (sources/__init__.py) beside the test that
tells its locations apart (sources/locations.py), and its tests.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from trajectory_review.support.errors import Said


class SourceError(Said):
    """A source that cannot be read at all. Its message is one line, fit for a user."""


Progress = Callable[[int, int], None]


class TraceSource(Protocol):
    @property
    def location(self) -> str:
        """The location as given (a path, a URL), for messages."""
        ...

    def sync(self, progress: Progress | None = None) -> list[str]:
        """Bring a remote copy up to date (a no-op for local files); one-line warnings."""
        ...

    def files(self, skipped: list[str]) -> list[Path]:
        """The trace files to index; unreadable ones are named in `skipped`. Raises
        SourceError when there is nothing to read at all."""
        ...
