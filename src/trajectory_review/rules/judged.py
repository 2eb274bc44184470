"""One pipeline to judged answers: each conversation built once from its index rows, each
answer replayed once, and each final answer (what the user saw) judged once by the reply
rules. The catalog's rows, `lint`, what-if, `export`, the QA queue and the transcript all
read answers through it, so an answer is judged the same way wherever it is shown."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from trajectory_review.index.rows import resolved
from trajectory_review.model.matching import conversation_from_rows
from trajectory_review.model.trajectory import Conversation, Exchange, Warning
from trajectory_review.replay.project import ExchangeReplay, projected_text, replay_exchange
from trajectory_review.rules.lint import LintVerdict, lint
from trajectory_review.rules.registry import RuleConfig, RuleResult, Source, source_from_result
from trajectory_review.support.workers import Batch


class JudgedAnswer(msgspec.Struct, frozen=True, gc=False):
    exchange: Exchange
    replay: ExchangeReplay
    reply: str  # the answer as the user saw it: what the rules read
    sources: tuple[Source, ...]  # the tool results the rules check it against
    verdict: LintVerdict | None  # None: not judged (no final answer, or no rules asked)

    @property
    def results(self) -> tuple[RuleResult, ...]:
        return tuple(self.verdict.results) if self.verdict is not None else ()

    @property
    def failed(self) -> list[str]:
        """The rules the answer fails (the flags QA gives verdicts on)."""
        return [r.rule for r in self.results if r.failed]


def judge_answer(
    ex: Exchange, cfg: RuleConfig | None, replay: ExchangeReplay | None = None
) -> JudgedAnswer:
    """One answer replayed, and judged by `cfg` when it is a final answer."""
    rep = replay or replay_exchange(ex)
    reply = projected_text(rep)
    sources = tuple(source_from_result(r) for r in ex.tool_results())
    # Only a final answer is judged: an exchange cut off at a tool call has none.
    verdict = lint(reply, list(sources), cfg, "report") if cfg is not None and ex.complete else None
    return JudgedAnswer(ex, rep, reply, sources, verdict)


def judged_answers(
    conv: Conversation, cfg: RuleConfig | None, final_only: bool = False
) -> Iterator[JudgedAnswer]:
    """Every answer of a conversation (or only its final ones), replayed and judged."""
    for ex in conv.exchanges:
        if ex.complete or not final_only:
            yield judge_answer(ex, cfg)


def conversations(
    batch: Batch,
) -> Iterator[tuple[str, Conversation | None, list[Warning], str]]:
    """Each conversation of a batch (support.workers.Batch) built from its rows: its id,
    the conversation (None: dropped, and why in the warnings), and its fingerprint."""
    for cid, rows, fingerprint, _part in batch:
        why: list[Warning] = []
        yield cid, conversation_from_rows(cid, resolved(cid, rows), why), why, fingerprint
