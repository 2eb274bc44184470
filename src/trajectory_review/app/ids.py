"""The ids the page's parts name one another by: each feature module's namespace, and the
inputs and outputs that one part's HTML (or static/app.js, through the page's data-
attributes) sends to or waits for in another. One home, so a rename is one edit."""

from __future__ import annotations


def _in(namespace: str, *names: str) -> dict[str, str]:
    """Module ids as Shiny resolves them: `namespace-name`."""
    return {name: f"{namespace}-{name}" for name in names}


LIST, REVIEW = "list", "review"
NAV = "navigation"
KEYBOARD = "keys"
QUEUE = "queue"
TRANSCRIPT = "transcript"
HEADER = "header"
SAMPLES, QUALITY, WHATIF, TREND = "samples", "quality", "whatif", "trend"
WARNINGS, DOWNLOADS = "warnings", "downloads"
MAIN_TABS = "main_tabs"  # the navset of Transcript, Rule quality, What if, Trust over time

NAV_INPUTS = _in(NAV, "nav", "flag_exchange", "url_state")
KEY_INPUT = _in(KEYBOARD, "key")["key"]  # every key the page sends (app/keys.py, SENT)
VERDICT_INPUT, MARK_INPUT = _in(QUEUE, "verdict", "answer_mark").values()
TRANSCRIPT_OUTPUT = _in(TRANSCRIPT, "view")["view"]
TRANSCRIPT_INPUTS = _in(TRANSCRIPT, "more", "show_all")
HEADER_STATS = _in(HEADER, "stats")["stats"]  # a text output served holding its first text
# sent by the page's buttons (app/actions.py)
SAMPLE_SETTLE, SAMPLE_WORK, SAMPLE_NEXT, SAMPLE_SPOT = _in(
    SAMPLES, "settle", "work", "next", "spot"
).values()
