"""The What if tab: a candidate reply-rules profile run against the one in force over the
recorded answers (rules/whatif.py), in the background, before anyone enforces it.

The candidate is a profile the app offers (rules/offered.py: picked by key, never by
path) or a pasted profile, checked as it is typed (one line naming the key that is
wrong), off the event loop. A run replays every answer once in worker processes of its
own, stopped at TRAJECTORY_WHATIF_SECONDS (rules/whatif.py), never in this process; the tab
follows its progress, then shows the per-rule table and the answers decided differently,
each a link that opens the transcript, where the answer shows both decisions side by
side (app/transcript.py, `whatif_strip`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from htmltools import Tag, TagList, tags
from shiny import Inputs, Outputs, Session, module, reactive, render, ui

from trajectory_review import settings
from trajectory_review.app.feed import Reviews
from trajectory_review.app.watch import watch
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.urls import conversation_href
from trajectory_review.model.reader import TraceReader
from trajectory_review.rules.offered import (
    MAX_PROFILE_BYTES,
    Offered,
    offered_profiles,
    read_offered,
)
from trajectory_review.rules.registry import RuleConfig, RulesError, rules_from_text
from trajectory_review.rules.whatif import WhatIf, what_if
from trajectory_review.support.errors import one_line
from trajectory_review.support.isolated import TimeLimit

PASTED = "(paste a profile)"
MAX_LISTED = 500  # changed answers listed in the tab (the CLI's --json has them all)


def candidate_from(choice: str, pasted: str, offered: dict[str, Offered]) -> RuleConfig | str:
    """The candidate, or why it cannot be used (one line naming the key). Reads and
    parses a file, so it runs off the event loop."""
    try:
        if choice == PASTED:
            if not pasted.strip():
                return "Paste a profile, or pick one above."
            if len(pasted) > MAX_PROFILE_BYTES:
                return f"The pasted profile is over {MAX_PROFILE_BYTES:,} characters."
            return rules_from_text(pasted, "the pasted profile")
        item = offered.get(choice)
        if item is None:
            return "That profile is not one this app offers."
        return rules_from_text(read_offered(item), item.label)
    except RulesError as exc:
        return one_line(exc)


@dataclass
class Run:
    """One what-if run of a session, done on a thread: how far, and its result."""

    done: int = 0
    total: int = 0
    result: WhatIf | None = None
    error: str | None = None
    started: float = field(default_factory=time.monotonic)
    finished: bool = False

    def state(self) -> tuple[int, int, bool]:
        return (self.done, self.total, self.finished)


@module.ui
def whatif_ui() -> TagList:
    return TagList(
        tags.div(
            tags.div("What if: try a rule change on recorded answers", class_="tr-chart-title"),
            tags.div(
                "A candidate profile against the one in force: every answer replayed once "
                "and judged by both, flags gained and lost per rule, scored against what "
                "reviewers already said. Nothing is enforced or written.",
                class_="tr-chart-note",
            ),
            ui.input_select("profile", "Candidate profile", {}, width="100%"),
            ui.input_text_area(
                "pasted",
                "Or paste a profile (TOML; keys you leave out keep the shipped values)",
                rows=6,
                width="100%",
                placeholder='[no-banned-phrases]\n[[no-banned-phrases.pattern]]\nregex = "..."',
            ),
            ui.output_ui("checked"),
            ui.input_radio_buttons(
                "scope",
                "Over",
                {"all": "every recorded answer", "list": "the conversations of the current list"},
                inline=True,
            ),
            ui.input_action_button("run", "Run what if", class_="btn-primary btn-sm"),
            class_="tr-whatif-form",
        ),
        ui.output_ui("result"),
    )


# Long on purpose: a module server: the closure its outputs and effects share (each short).
@module.server
def whatif_server(
    input: Inputs,
    output: Outputs,
    session: Session,
    reader: TraceReader,
    catalog: Catalog,
    reviews: Reviews,
    rules: RuleConfig,
    filters: Callable[[], Filters],
) -> reactive.Value[WhatIf | None]:
    """Returns the session's latest what-if result (the transcript shows its decisions)."""
    latest: reactive.Value[WhatIf | None] = reactive.value(None, name="latest")
    run: list[Run] = [Run(finished=True)]
    # a run was started
    progress_tick: reactive.Value[int] = reactive.value(0, name="progress_tick")

    @reactive.effect
    def _choices() -> None:
        files = {k: o.label for k, o in offered_profiles(settings.rules_dir()).items()}
        ui.update_select("profile", choices={PASTED: PASTED, **files}, selected=PASTED)

    @reactive.calc
    async def candidate() -> RuleConfig | str:
        """The candidate, or why it cannot be used. The browser's value is only ever a
        key, looked up in the profiles offered now."""
        choice, text = str(input.profile() or PASTED), str(input.pasted() or "")
        offered = offered_profiles(settings.rules_dir()) if choice != PASTED else {}
        return await asyncio.to_thread(candidate_from, choice, text, offered)

    @render.ui
    async def checked() -> Tag:
        c = await candidate()
        if isinstance(c, str):
            return tags.p(c, class_="tr-whatif-error", role="alert")
        return tags.p(f"Candidate: {c.source}. In force: {rules.source}.", class_="tr-muted")

    @reactive.effect
    @reactive.event(input.run)
    async def _run() -> None:
        c = await candidate()
        if isinstance(c, str):
            ui.notification_show(f"Not run: {c}", type="warning")
            return
        if not run[0].finished:
            ui.notification_show("A what-if run is under way.", type="warning")
            return
        only = None
        if input.scope() == "list":
            only = sorted(set(catalog.matching_answers(filters())["conversation_id"]))
        job = Run()
        run[0] = job
        state = reviews.state()

        def work() -> None:
            def progress(done: int, total: int) -> None:
                job.done, job.total = done, total

            try:
                job.result = what_if(reader, rules, c, state, only=only, progress=progress)
            except TimeLimit as exc:
                job.error = (
                    f"The what-if run {exc} (TRAJECTORY_WHATIF_SECONDS) and was stopped; "
                    "nothing changed."
                )
            except Exception as exc:
                job.error = f"The what-if run failed: {one_line(exc)}"
            finally:
                job.finished = True

        threading.Thread(target=work, name="trajectory-review-whatif", daemon=True).start()
        with reactive.isolate():
            progress_tick.set(progress_tick() + 1)

    @watch(lambda: run[0].state(), 0.25)
    def job_state() -> tuple[int, int, bool]:
        return run[0].state()

    @reactive.effect
    def _finished() -> None:
        done, total, finished = job_state()
        progress_tick()
        if finished and run[0].result is not None and run[0].result is not latest.get():
            latest.set(run[0].result)

    @render.ui
    def result() -> Tag | None:
        done, total, finished = job_state()
        progress_tick()
        job = run[0]
        if not finished:
            share = done / total if total else 0.0
            return tags.div(
                tags.p(f"Replaying and judging: {done:,} of {total:,} conversations"),
                tags.div(
                    tags.div(class_="tr-bar-fill", style=f"width:{share:.0%}"),
                    class_="tr-bar",
                ),
                class_="tr-whatif-progress",
                role="status",
            )
        if job.error:
            return tags.p(job.error, class_="tr-whatif-error", role="alert")
        w = latest.get()
        return whatif_html(w, time.monotonic() - job.started) if w is not None else None

    return latest


def whatif_html(w: WhatIf, seconds: float) -> Tag:
    def pair(values: tuple[Any, ...], fmt: Callable[..., Any] = str) -> str:
        a, b = (fmt(v) for v in values)
        return a if a == b else f"{a} → {b}"

    def share(v: float | None) -> str:
        return "—" if v is None else f"{v:.0%}"

    head = tags.tr(*[tags.th(h) for h in (
        "Rule", "Not applicable", "Flagged", "Gained", "Lost", "Kept", "Would withhold",
        "Precision (flags with a verdict)", "Gained flags called false positive",
        "Lost flags called correct",
    )])  # fmt: skip
    body = [
        tags.tr(
            tags.td(tags.code(r.rule)),
            tags.td(pair(r.not_applicable)),
            tags.td(pair(r.flagged)),
            tags.td(f"+{r.gained}" if r.gained else "0", class_="tr-gained" if r.gained else ""),
            tags.td(f"−{r.lost}" if r.lost else "0", class_="tr-lost" if r.lost else ""),
            tags.td(r.unchanged),
            tags.td(pair(r.withhold)),
            tags.td(
                f"{share(r.precision[0])} (n={r.comparable[0]}) → "
                f"{share(r.precision[1])} (n={r.comparable[1]})"
            ),  # fmt: skip
            tags.td(r.gained_false_positive),
            tags.td(r.lost_correct),
            data_rule=r.rule,
        )
        for r in w.rules
    ]
    changes = [
        tags.li(
            tags.a(
                f"{d.conversation_id} #{d.exchange}",
                href=conversation_href(d.conversation_id, d.exchange),
                data_conversation=d.conversation_id,
                data_exchange=str(d.exchange),
                class_="tr-nav-link",
            ),
            tags.code(d.rule),
            tags.span(d.change, class_=f"tr-change tr-change-{d.change}"),
            tags.span(", ".join(d.evidence[:3]), class_="tr-change-evidence") if d.evidence else "",
        )
        for d in w.diffs[:MAX_LISTED]
    ]
    return tags.div(
        tags.p(
            f"{w.answers:,} answers in {seconds:.1f} s · {w.changed_answers:,} decided "
            f"differently · would withhold {pair(w.withheld, lambda v: f'{v:,}')} "
            f"({w.newly_withheld:,} newly, {w.no_longer_withheld:,} no longer)",
            class_="tr-whatif-summary",
        ),
        tags.p(f"Candidate: {w.after}. In force: {w.before}.", class_="tr-muted"),
        tags.table(tags.thead(head), tags.tbody(*body), class_="table table-sm tr-table tr-whatif"),
        tags.h4(f"Answers decided differently ({len(w.diffs):,} rule decisions)")
        if w.diffs
        else tags.p("No answer is decided differently.", class_="tr-muted"),
        tags.ul(*changes, class_="tr-whatif-changes") if changes else "",
        tags.p(
            f"The first {MAX_LISTED:,} are listed; `trajectory-review lint --compare "
            "--json` gives them all.",
            class_="tr-muted",
        )  # fmt: skip
        if len(w.diffs) > MAX_LISTED
        else "",
        class_="tr-chart-wrap tr-whatif-result",
    )
