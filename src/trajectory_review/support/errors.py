"""An exception as the one line a reviewer or a log reads: every place that reports a
failure without stopping (a step behind the list, a worker's answer, a source that could
not be read) says it the same way, so a message never carries a traceback or a page of
server text into the page."""

from __future__ import annotations

LIMIT = 300  # characters: a line of the page, the log, or a CLI's stderr


class Said(Exception):
    """An error whose message is already written for the reader (a source that cannot be
    read, a rules file that is wrong): reported as it is, without its class name."""


def one_line(exc: BaseException, limit: int = LIMIT) -> str:
    """The message folded onto one line (a server's multi-line error keeps its detail),
    after the class name unless the message is already written for the reader."""
    text = " ".join(str(exc).split())
    if not isinstance(exc, Said):
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return (text or type(exc).__name__)[:limit]
