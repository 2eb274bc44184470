"""Replay one exchange: raw answer runs through the scanner with the recorded decisions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .citations import (
    AsideSegment,
    RecordedResolver,
    Segment,
    TextSegment,
    aside_body,
    aside_markup,
    escape_attribute,
    scan,
)
from .provenance import CITATION_ICONS, Chip, chips_after_answer, icon_path
from .trajectory import Exchange


@dataclass(frozen=True)
class ExchangeReplay:
    runs: tuple[tuple[Segment, ...], ...]  # one projected run per raw run
    rejected: int
    malformed: int
    chips: tuple[Chip, ...]

    @property
    def accepted_asides(self) -> list[AsideSegment]:
        return [s for run in self.runs for s in run if isinstance(s, AsideSegment)]


def count_status(decisions: tuple[Any, ...], status: str) -> int:
    return sum(1 for d in decisions if isinstance(d, dict) and d.get("status") == status)


def replay_exchange(exchange: Exchange) -> ExchangeReplay:
    # One resolver for the whole exchange: the decision index carries across tool calls.
    resolver = RecordedResolver(exchange.decisions)
    runs = tuple(scan(run, resolver).segments for run in exchange.answer_runs())
    rejected = count_status(exchange.decisions, "rejected")
    malformed = count_status(exchange.decisions, "malformed")
    return ExchangeReplay(
        runs, rejected, malformed, tuple(chips_after_answer(exchange.tag, rejected))
    )


def projected_text(replay: ExchangeReplay) -> str:
    """The model text the user saw, asides left out: what the reply rules judge."""
    return "\n\n".join(
        "".join(s.text for s in run if isinstance(s, TextSegment)) for run in replay.runs
    )


def segments_markup(
    segments: tuple[Segment, ...],
    escape: Callable[[str], str] = lambda s: s,
    icon_base: str = "",
    attribute: Callable[[str], str] = escape_attribute,
) -> str:
    """Segments as the live chat's markup. `escape` is applied to every piece of model
    text and `attribute` to every attribute value (the reviewer's page escapes both
    completely; the export keeps what the live chat streamed)."""
    out = []
    for seg in segments:
        if isinstance(seg, TextSegment):
            out.append(escape(seg.text))
        else:
            icon = icon_path(CITATION_ICONS[seg.kind], icon_base)
            out.append(
                aside_markup(
                    seg.label, icon, aside_body(escape(seg.reason), escape(seg.quote)), attribute
                )
            )
    return "".join(out)


def projected_markup(
    replay: ExchangeReplay,
    escape: Callable[[str], str] = lambda s: s,
    icon_base: str = "",
    attribute: Callable[[str], str] = escape_attribute,
) -> str:
    return "\n\n".join(segments_markup(run, escape, icon_base, attribute) for run in replay.runs)
