"""Where one core's replay goes: the catalog's rows of a corpus built in this process under
cProfile, each function's own time summed by the stage its module belongs to.

    .venv/bin/python scripts/profile_replay.py bench-data/corpus-5000-103 [--conversations N]

The stages are the pipeline's (docs/architecture.md): reading the index's rows, decoding
the message JSON, matching records to answers, reading exchanges (their runs, tools,
question), scanning the answers for citations, projecting them, the reply rules, and the
catalog's rows. (Records are built in C, msgspec's, and most messages are decoded straight
into structs: cProfile sees no call to time there.) Prints a table in the order of the
time spent, with the answers per second the run reached (under cProfile, which slows
Python code more than C code: the shares are what to read).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

# module path fragment -> stage, first match wins
STAGES = (
    ("index/", "read the index's rows"),
    ("model/messages", "decode messages"),
    ("model/history", "decode messages"),
    ("model/typed", "decode messages"),
    ("model/spans", "decode messages"),
    ("json", "decode messages"),
    ("model/matching", "match records to answers"),
    ("model/trajectory", "read exchanges (model/trajectory)"),
    ("replay/citations", "scan for citations"),
    ("replay/documents", "scan for citations"),
    ("replay/", "project answers"),
    ("rules/", "reply rules"),
    ("re2", "reply rules"),
    ("listing/answer_rows", "catalog rows"),
    ("support/", "catalog rows"),
)


def stage_of(filename: str, name: str) -> str:
    if filename == "~" and ("json" in name or "loads" in name):
        return "decode messages"
    for fragment, stage in STAGES:
        if fragment in filename:
            return stage
    return "other"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus", type=Path)
    p.add_argument("--conversations", type=int, default=2000)
    args = p.parse_args()

    from trajectory_review.listing.answer_rows import answer_batch
    from trajectory_review.model.reader import TraceReader
    from trajectory_review.rules.registry import load_rules
    from trajectory_review.support.workers import batches

    reader = TraceReader.open([str(args.corpus)], cache=False)
    rules = load_rules()
    ids = reader.index.conversation_ids()[: args.conversations]
    work = list(batches(reader.index.iter_chat_rows(only=ids), {}))
    profile = cProfile.Profile()
    began = time.perf_counter()
    profile.enable()
    answers = sum(len(answer_batch(batch, rules)[0]) for batch in work)
    profile.disable()
    seconds = time.perf_counter() - began
    totals: dict[str, float] = {}
    stats = pstats.Stats(profile).stats
    for (filename, _line, name), (_cc, _nc, own, _cum, callers) in stats.items():
        stage = stage_of(filename, name)
        if stage == "other" and filename == "~" and callers:
            # a builtin (dict.get, isinstance, …): its time is its callers' stages', shared
            # as they called it
            spent = sum(c[2] for c in callers.values()) or 1.0
            for (cfile, _l, cname), c in callers.items():
                caller = stage_of(cfile, cname)
                totals[caller] = totals.get(caller, 0.0) + own * c[2] / spent
            continue
        totals[stage] = totals.get(stage, 0.0) + own
    whole = sum(totals.values())
    print(f"{answers:,} answers of {len(ids):,} conversations in {seconds:.2f} s under cProfile "
          f"({answers / seconds:,.0f} answers/s)")  # fmt: skip
    print("| stage | share of the time |")
    print("|---|---|")
    for stage, own in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"| {stage} | {own / whole:.0%} |")


if __name__ == "__main__":
    main()
