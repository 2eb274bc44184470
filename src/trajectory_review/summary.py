"""One row per answer: what the list, filters, search, chart and QA queue query.

Built once per index by replaying every conversation (the same replay the transcript
uses) and running the reply rules in report mode over each answer, then handed to DuckDB
as a pandas frame so lists are paged and filtered in SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd

from .provenance import tag_key
from .qa import lint_exchange
from .reader import TraceReader
from .replay import projected_text, replay_exchange
from .rules import RULES, RuleConfig, load_rules
from .trajectory import Conversation

COLUMNS = [
    "conversation_id", "exchange", "n_exchanges", "question", "answer_text", "tag",
    "rejected", "malformed", "conflict", "complete", "last_active_ns", "answered_ns", "day",
    "branches", "model", "tools", "warnings", "failed_rules", "blocking_rules", "na_rules",
    "fingerprint",
]  # fmt: skip


def answer_rows(conv: Conversation, cfg: RuleConfig, fingerprint: str = "") -> Iterable[dict]:
    for ex in conv.exchanges:
        rep = replay_exchange(ex)
        # Only a final answer is judged: an exchange cut off at a tool call has none.
        results = lint_exchange(ex, cfg, rep).results if ex.complete else ()
        answered = ex.calls[-1].end_ns if ex.calls else conv.last_active_ns
        yield {
            "conversation_id": conv.id,
            "exchange": ex.index,
            "n_exchanges": len(conv.exchanges),
            "question": ex.question,
            "answer_text": projected_text(rep),
            "tag": tag_key(ex.tag),
            "rejected": rep.rejected,
            "malformed": rep.malformed,
            "conflict": ex.conflict,
            "complete": ex.complete,
            "last_active_ns": conv.last_active_ns,
            "answered_ns": answered,
            "day": datetime.fromtimestamp(answered / 1e9, UTC).date(),
            "branches": len(conv.branches),
            "model": ex.calls[-1].model if ex.calls else None,
            "tools": ",".join(sorted({t.name or "" for t in ex.tools()})),
            "warnings": len(conv.warnings),
            # the reply rules in report mode: what the linter would have done
            "failed_rules": [r.rule for r in results if r.failed],
            "blocking_rules": [r.rule for r in results if r.failed and r.blocks_publish],
            "na_rules": [r.rule for r in results if not r.applicable] if results else list(RULES),
            "fingerprint": fingerprint,  # of the conversation: unchanged rows are reused
        }


@dataclass(frozen=True)
class Answers:
    frame: pd.DataFrame
    dropped: int  # conversations with no exchange
    warnings: list[tuple[str | None, str]]  # (conversation id, message)


def build_answers(
    reader: TraceReader,
    cfg: RuleConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
    only: Sequence[str] | None = None,
) -> Answers:
    """All answers of all conversations (or only these), with what went wrong reading them.

    progress(done, total) is called every few hundred conversations.
    """
    rows: list[dict] = []
    dropped = 0
    warnings: list[tuple[str | None, str]] = []
    cfg = cfg or load_rules()
    total = reader.stats.conversations if only is None else len(only)
    prints = reader.index.conversation_fingerprints()
    for done, (cid, conv) in enumerate(reader.iter_conversations(only), 1):
        if progress is not None and done % 500 == 0:
            progress(done, total)
        if conv is None:
            dropped += 1
            continue
        rows.extend(answer_rows(conv, cfg, prints.get(cid, "")))
        warnings.extend((w.conversation_id, w.message) for w in conv.warnings)
    return Answers(pd.DataFrame(rows, columns=COLUMNS), dropped, warnings)
