"""The review log as one reactive source for a session.

Every output that shows review state reads `state()` or `done()`: they change when this
session saves an event (at once) or when another session or process appends to the log
(its signature is polled twice a second). Nothing threads a counter through the modules;
an output that must not re-render for a colleague's note elsewhere (the transcript)
narrows `state()` to what it shows, see transcript.own_events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shiny import Inputs, Session, reactive, ui
from shiny.session._session import AppSession

from trajectory_review import settings
from trajectory_review.app.catalog_feed import CatalogFeed
from trajectory_review.app.watch import watch
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.queue import AnswerKey, failing_rules
from trajectory_review.reviews.log import (
    AUTHENTICATED,
    DECLARED,
    Reviewer,
    ReviewEvent,
    ReviewLogError,
    ReviewState,
    clean_name,
    local_user,
)
from trajectory_review.reviews.store import ReviewStore

# Two reviewers on one queue see each other's "done" within a second.
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Reviews:
    log: ReviewStore
    state: Callable[[], ReviewState]  # everything the log says, now
    done: Callable[[], frozenset[AnswerKey]]  # the answers QA has finished
    _saved: reactive.Value[Any]

    async def save(self, event: ReviewEvent) -> bool:
        """The one way the app writes a review event: a store that cannot take it
        (read-only, a directory, a full disk, a database away) is one line on the page,
        never a dropped session. Off the event loop: a database that does not answer
        keeps this session waiting, never every other reviewer's."""
        try:
            await asyncio.to_thread(self.log.append, event)
        except (ReviewLogError, ValueError) as exc:
            ui.notification_show(f"Not saved: {exc}", type="error", duration=8)
            return False
        with reactive.isolate():
            self._saved.set(self._saved() + 1)
        return True


def review_feed(log: ReviewStore, catalog: Catalog, feed: CatalogFeed) -> Reviews:
    saved = reactive.value(0, name="saved")

    @watch(log.signature, POLL_SECONDS)
    def signature() -> object:
        return log.signature()

    @reactive.calc
    def state() -> ReviewState:
        signature()
        saved()
        return log.state()

    # Which rules an answer fails comes from the catalog, which the reply rules may still
    # be filling in after a start: without this, answers given verdicts before a restart
    # showed as "to do" until the next review event.
    @reactive.calc
    def done() -> frozenset[AnswerKey]:
        s = state()
        feed.judged()
        return s.done_answers(failing_rules(catalog, s.judged()))

    return Reviews(log, state, done, saved)


LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def acting(user: Callable[[], Reviewer | None]) -> Reviewer | None:
    """Who an action is recorded as; None, and a line on the page saying why, while the
    reviewer has not given a name."""
    with reactive.isolate():
        who = user()
    if who is None:
        ui.notification_show("Give your name first (in the review pane).", type="warning")
    return who


def reviewer(input: Inputs, session: Session) -> Callable[[], Reviewer | None]:
    """Who is reviewing, and how that is known.

    - The login a trusted proxy sent (Connect, Shiny Server): authenticated. The header
      reaches a session only then: app/guard.py drops it from every other request.
    - A browser on the machine that runs `serve`: the login name of the account running
      it, declared (the machine knows it, nobody signed in).
    - Anyone else (anonymous access on Connect, a colleague reaching a `serve` on another
      machine, a browser behind a proxy): the name the reviewer typed, which the browser
      keeps; declared, and None until it is given. Never the server's account: notes are
      evidence, and two people would share one name."""

    @reactive.calc
    def user() -> Reviewer | None:
        login = clean_name(session.user) if session.user else ""
        if login:
            return Reviewer(login, AUTHENTICATED)
        if _same_machine(session):
            return Reviewer(clean_name(local_user()) or "reviewer", DECLARED)
        if "reviewer_name" not in input:
            return None
        typed = clean_name(input.reviewer_name())
        return Reviewer(typed, DECLARED) if typed else None

    return user


def _same_machine(session: Session) -> bool:
    if settings.on_posit_connect() or settings.trusted_proxy():
        return False
    root = session.root_scope()
    if not isinstance(root, AppSession):  # no browser's connection to judge by
        return False
    conn = root.http_conn
    if "x-forwarded-for" in conn.headers or "forwarded" in conn.headers:
        return False  # a proxy on this machine speaks for browsers elsewhere
    return conn.client is not None and conn.client.host in LOOPBACK
