"""Replay one exchange: raw answer runs through the scanner with the recorded decisions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from trajectory_review.model.provenance import (
    CITATION_ICONS,
    Chip,
    chips_after_answer,
    live_icon_url,
)
from trajectory_review.model.trajectory import Exchange
from trajectory_review.replay.citations import (
    ArtifactSegment,
    AsideSegment,
    Segment,
    TextSegment,
    scan,
)
from trajectory_review.replay.markup import aside_body, aside_markup, escape_attribute
from trajectory_review.replay.resolvers import RecordedResolver


class ExchangeReplay(msgspec.Struct, frozen=True, gc=False):
    runs: tuple[tuple[Segment, ...], ...]  # one projected run per raw run
    rejected: int
    malformed: int
    chips: tuple[Chip, ...]

    @property
    def accepted_asides(self) -> list[AsideSegment]:
        return [s for run in self.runs for s in run if isinstance(s, AsideSegment)]

    @property
    def artifacts(self) -> list[ArtifactSegment]:
        return [s for run in self.runs for s in run if isinstance(s, ArtifactSegment)]


def rejected_and_malformed(decisions: tuple[Any, ...]) -> tuple[int, int]:
    """How many decisions were rejected and how many malformed, in one pass. (A status
    is compared, never hashed: a recorder can write a list there.)"""
    rejected = malformed = 0
    for d in decisions:
        if isinstance(d, dict):
            status = d.get("status")
            if status == "rejected":
                rejected += 1
            elif status == "malformed":
                malformed += 1
    return rejected, malformed


def replay_exchange(exchange: Exchange) -> ExchangeReplay:
    # One resolver for the whole exchange: the decision index carries across tool calls.
    decisions = exchange.decisions
    resolver = RecordedResolver(decisions)
    runs = tuple(scan(run, resolver).segments for run in exchange.answer_runs())
    rejected, malformed = rejected_and_malformed(decisions)
    return ExchangeReplay(
        runs, rejected, malformed, tuple(chips_after_answer(exchange.tag, rejected))
    )


def projected_text(replay: ExchangeReplay) -> str:
    """The model text the user saw, asides left out: what the reply rules judge."""
    return "\n\n".join(
        "".join(s.text for s in run if isinstance(s, TextSegment)) for run in replay.runs
    )


@dataclass(frozen=True)
class MarkupStyle:
    """How segments become markup. `text` is applied to every piece of model text (the
    answer, and the reason and quote inside an aside), `attribute` to every attribute
    value, `icon_url` names a citation kind's icon."""

    text: Callable[[str], str]
    attribute: Callable[[str], str]
    icon_url: Callable[[str], str]
    artifact: Callable[[ArtifactSegment], str] = lambda a: artifact_placeholder(a)


def artifact_placeholder(artifact: ArtifactSegment) -> str:
    """What commons' close handler leaves in the stream where a document was (the live
    chat draws its chip there)."""
    return f"[artifact:{artifact.id}]"


# What the live chat streamed, byte for byte: the export's `answer_projected`.
LIVE = MarkupStyle(text=lambda s: s, attribute=escape_attribute, icon_url=live_icon_url)


def segments_markup(segments: tuple[Segment, ...], style: MarkupStyle = LIVE) -> str:
    out = []
    for seg in segments:
        if isinstance(seg, TextSegment):
            out.append(style.text(seg.text))
        elif isinstance(seg, ArtifactSegment):
            out.append(style.artifact(seg))
        else:
            body = aside_body(style.text(seg.reason), style.text(seg.quote))
            icon = style.icon_url(CITATION_ICONS[seg.kind])
            out.append(aside_markup(seg.label, icon, body, style.attribute))
    return "".join(out)


def projected_markup(replay: ExchangeReplay, style: MarkupStyle = LIVE) -> str:
    return "\n\n".join(segments_markup(run, style) for run in replay.runs)
