"""How far the session's catalog is, polled once per session and handed to every module
that shows it (the list, its counts and summary, the header, the warnings, rule quality,
the trend, the review state's "done" answers): one watch on the catalog, not one per
module (six polled the same counter).

The reply rules may still be running over the answers after the list is served
(Catalog.judge), and conversations may still be replayed into it (Catalog.fill): what
depends on them is drawn again once they are in, and says how far they are meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from shiny import reactive

from trajectory_review.app.watch import watch
from trajectory_review.listing.queries import Catalog

T = TypeVar("T")


@dataclass(frozen=True)
class CatalogFeed:
    """How far the catalog is, as reactive values a session's outputs depend on."""

    judged: reactive.Value[int]  # the catalog's generation: a new one redraws what shows it
    judging: reactive.Value[float | None]  # share of answers judged, while they run
    replaying: reactive.Value[float | None]  # share of conversations read, while they are


def catalog_feed(catalog: Catalog) -> CatalogFeed:
    """The feed of one session (called once, by the server that wires the modules)."""

    def state() -> tuple[int, float | None, float | None]:
        return (catalog.judged_generation, catalog.judging, catalog.replaying)

    @watch(state, 1.0)
    def polled() -> tuple[int, float | None, float | None]:
        return state()

    now = CatalogFeed(
        reactive.value(catalog.judged_generation, name="judged"),
        reactive.value(catalog.judging, name="judging"),
        reactive.value(catalog.replaying, name="replaying"),
    )

    # One poll of all three, set in one effect: the count and the note saying it is not
    # final change in the same flush (two polls once showed the old count without the note).
    @reactive.effect
    def _set() -> None:
        judged, judging, replaying = polled()
        with reactive.isolate():
            _put(now.judged, judged)
            _put(now.judging, judging)
            _put(now.replaying, replaying)

    return now


def _put(value: reactive.Value[T], new: T) -> None:
    """Set a value only when it changed: a set of the same value still redraws."""
    if new != value.get():
        value.set(new)
