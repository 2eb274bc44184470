"""`watch`: what `reactive.poll` does, a session's timer that looks at something cheap (a
file's size, a counter) and invalidates what reads it when it changes — without the
tracebacks.

Shiny's poll re-arms `invalidate_later` after every look, and that task prints a
traceback for any exception, cancellation included: a session ending (a reviewer
navigating away) while its timer waited for the reactive lock behind another session's
long render printed `CancelledError` tracebacks into the server log on plain
navigation. Here one task per watch sleeps, looks, and only takes the lock when the
value changed; the session's end cancels it, quietly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from shiny import reactive
from shiny.session import get_current_session

T = TypeVar("T")
R = TypeVar("R")


def watch(check: Callable[[], T], seconds: float) -> Callable[[Callable[[], R]], Callable[[], R]]:
    """Decorate a function to be re-run (as a reactive.calc) whenever `check()` gives a
    new value, looked at every `seconds` (as `@reactive.poll(check, seconds)`)."""

    def decorate(fn: Callable[[], R]) -> Callable[[], R]:
        last = [check()]
        seen: reactive.Value[T] = reactive.value(last[0], name=f"watch:{fn.__name__}")

        async def look() -> None:
            try:
                while True:
                    await asyncio.sleep(seconds)
                    try:
                        now = check()
                    except Exception:
                        continue
                    if now == last[0]:
                        continue
                    last[0] = now
                    async with reactive.lock():
                        seen.set(now)
                        await reactive.flush()
            except asyncio.CancelledError:
                return  # the session ended: nothing to say

        task = asyncio.get_running_loop().create_task(look())
        session = get_current_session()
        if session is not None:
            session.on_ended(lambda: None if task.cancel() else None)

        @reactive.calc
        def value() -> R:
            seen()
            return fn()

        return value

    return decorate
