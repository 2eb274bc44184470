"""Who decides a citation: live, a quote is checked against trusted text; in replay, each
citation takes the next recorded decision and is never verified again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trajectory_review.replay.citations import (
    KINDS,
    MIN_QUOTE,
    AsideSegment,
    ParsedCitation,
    Resolution,
    normalise_quote,
)


@dataclass(frozen=True)
class CorpusEntry:
    text: str
    label: str
    kind: str


class VerifyResolver:
    """Live: a quote is accepted when it is a substring of a trusted corpus entry."""

    def __init__(self, corpus: Sequence[CorpusEntry]):
        self._corpus = [(normalise_quote(e.text), e) for e in corpus]

    def resolve(self, citation: ParsedCitation | None) -> Resolution:
        if citation is None:
            return Resolution({"quote": None, "status": "malformed"}, None)
        needle = normalise_quote(citation.quote)
        if len(needle) >= MIN_QUOTE:
            for text, entry in self._corpus:
                if needle in text:
                    decision = {
                        "quote": citation.quote,
                        "status": "accepted",
                        "label": entry.label,
                        "kind": entry.kind,
                    }
                    aside = AsideSegment(entry.label, entry.kind, citation.reason, citation.quote)
                    return Resolution(decision, aside)
        return Resolution({"quote": citation.quote, "status": "rejected"}, None)


class RecordedResolver:
    """Replay: each citation takes the next recorded decision, in order; never re-verifies.

    One instance is shared by every scanner of an exchange so the position carries on
    across tool calls (docs/spec.md §4).
    """

    def __init__(self, decisions: Sequence[Any]):
        self._decisions = list(decisions)
        self.position = 0

    def resolve(self, citation: ParsedCitation | None) -> Resolution:
        recorded = None
        if self.position < len(self._decisions):
            recorded = self._decisions[self.position]
        self.position += 1
        decision = recorded if isinstance(recorded, dict) else None
        if citation is None or decision is None:
            return Resolution(decision, None)
        return Resolution(decision, _accepted_aside(decision, citation))


def _accepted_aside(decision: dict[str, Any], citation: ParsedCitation) -> AsideSegment | None:
    quote, label, kind = decision.get("quote"), decision.get("label"), decision.get("kind")
    if (
        decision.get("status") == "accepted"
        and isinstance(quote, str)
        and normalise_quote(quote) == normalise_quote(citation.quote)
        and isinstance(label, str)
        and label.strip()
        and kind in KINDS
    ):
        # The aside shows the quote as it stands in the raw text; the record only vouches.
        return AsideSegment(label, kind, citation.reason, citation.quote)
    return None
