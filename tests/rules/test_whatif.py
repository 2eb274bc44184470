"""Rule what-if (issue #36): a candidate profile against the one in force, over every
recorded answer, answer by answer, scored against what reviewers already said."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trajectory_review.model.reader import TraceReader
from trajectory_review.replay.project import projected_text, replay_exchange
from trajectory_review.reviews.log import ReviewEvent, ReviewLog
from trajectory_review.rules.judged import judge_answer
from trajectory_review.rules.registry import load_rules, profile_path
from trajectory_review.rules.whatif import what_if
from trajectory_review.support import isolated
from trajectory_review.tools.cli import main
from trajectory_review_bench.generate import generate

PHRASE = r"\bacre-weighted\b"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("whatif")
    generate(root / "traces", conversations=120, seed=9)
    return root / "traces"


def candidate(tmp_path: Path, extra: str) -> Path:
    """The shipped profile with `extra` appended (a list key replaces the whole list, so
    a new banned phrase is written beside the old ones)."""
    path = tmp_path / "candidate.toml"
    path.write_text(profile_path("default").read_text() + "\n" + extra, encoding="utf-8")
    return path


def banned_before(reader: TraceReader) -> tuple[dict[tuple[str, int], str], set]:
    """Every final answer's text, and those the shipped banned phrases flag already."""
    old = load_rules()
    texts, flagged = {}, set()
    for _cid, conv, _ in reader.iter_conversations():
        for ex in conv.exchanges if conv is not None else ():
            if not ex.complete:
                continue
            texts[(conv.id, ex.index)] = projected_text(replay_exchange(ex))
            if "no-banned-phrases" in judge_answer(ex, old).failed:
                flagged.add((conv.id, ex.index))
    return texts, flagged


def test_a_new_banned_phrase_gains_exactly_the_answers_that_contain_it(corpus, tmp_path):
    reader = TraceReader.open([corpus], cache=False)
    extra = f"[[no-banned-phrases.pattern]]\nregex = '{PHRASE}'\nreason = \"jargon\"\n"
    old, new = load_rules(), load_rules(candidate(tmp_path, extra))
    assert what_if(reader, old, old).changed_answers == 0  # itself: nothing differs
    texts, flagged = banned_before(reader)
    containing = {k for k, t in texts.items() if re.search(PHRASE, t, re.I)}
    w = what_if(reader, old, new)
    gained = {(d.conversation_id, d.exchange) for d in w.diffs}
    assert containing - flagged and gained == containing - flagged
    assert {d.rule for d in w.diffs} == {"no-banned-phrases"}
    assert {d.change for d in w.diffs} == {"gained"}
    rule = next(r for r in w.rules if r.rule == "no-banned-phrases")
    assert rule.gained == len(gained) and rule.flagged == (len(flagged), len(flagged | gained))
    assert w.answers == len(texts) and w.changed_answers == len(gained)
    assert all("acre-weighted" in " ".join(d.evidence).lower() for d in w.diffs)


def without_dead_packages(tmp_path):
    """The shipped profile with no dead package named: no-dead-package applies nowhere."""
    path = tmp_path / "no-dead.toml"
    path.write_text("[no-dead-package]\ndead = []\n")
    return load_rules(path)


def test_a_rule_made_inapplicable_loses_exactly_its_failures(corpus, tmp_path):
    reader = TraceReader.open([corpus], cache=False)
    old, new = load_rules(), without_dead_packages(tmp_path)
    w = what_if(reader, old, new)
    rule = next(r for r in w.rules if r.rule == "no-dead-package")
    assert rule.flagged[0] > 0 and rule.flagged[1] == 0
    assert rule.lost == rule.flagged[0] and rule.gained == 0
    assert rule.not_applicable[1] == rule.scanned
    lost = {(d.conversation_id, d.exchange) for d in w.diffs if d.rule == "no-dead-package"}
    assert len(lost) == rule.lost and all(d.change == "lost" for d in w.diffs)
    # answers withheld only by that rule are no longer withheld; each counted once
    assert w.no_longer_withheld <= rule.withhold[0] and w.newly_withheld == 0


def test_precision_is_scored_against_verdicts_and_null_without_any(corpus, tmp_path):
    reader = TraceReader.open([corpus], cache=False)
    old, new = load_rules(), without_dead_packages(tmp_path)
    log = ReviewLog(tmp_path / "r.jsonl")
    w = what_if(reader, old, new, log.state())
    rule = next(r for r in w.rules if r.rule == "no-dead-package")
    assert rule.precision == (None, None) and rule.comparable == (0, 0)  # never 0
    lost = [d for d in w.diffs if d.rule == "no-dead-package"]
    log.append(ReviewEvent("verdict", lost[0].conversation_id, "ann", lost[0].exchange, "",
                           "no-dead-package", "correct"))  # fmt: skip
    if len(lost) > 1:
        log.append(ReviewEvent("verdict", lost[1].conversation_id, "bo", lost[1].exchange, "",
                               "no-dead-package", "false_positive"))  # fmt: skip
    w = what_if(reader, old, new, log.state())
    rule = next(r for r in w.rules if r.rule == "no-dead-package")
    judged = min(len(lost), 2)
    assert rule.comparable == (judged, 0) and rule.precision[1] is None
    assert rule.precision[0] == pytest.approx(1 / judged)
    assert rule.lost_correct == 1


def test_the_command_line_compares_profiles_and_gates_on_new_withholds(corpus, tmp_path, capsys):
    added = candidate(
        tmp_path, f"[[no-banned-phrases.pattern]]\nregex = '{PHRASE}'\nreason = \"jargon\"\n"
    )
    assert main(["lint", str(corpus), "--rules", str(added), "--compare", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "trajectory-review/whatif@1"
    assert doc["per_rule"]["no-banned-phrases"]["gained"] > 0
    assert doc["newly_withheld"] > 0 and doc["changes"][0]["change"] == "gained"
    assert (
        main(["lint", str(corpus), "--rules", str(added), "--compare", "--fail-on", "never"]) == 0
    )
    text = capsys.readouterr().out
    assert text.startswith(f"What if: {added}") and "Changed answers" in text
    # the other way round: nothing newly withheld, so the gate passes
    assert main(["lint", str(corpus), "--rules", str(profile_path("default")),
                 "--compare", str(added)]) == 0  # fmt: skip
    capsys.readouterr()
    bad = tmp_path / "bad.toml"
    bad.write_text("[no-banned-phrases]\nnope = 1\n")
    assert main(["lint", str(corpus), "--rules", str(bad), "--compare"]) == 2
    assert "nope" in capsys.readouterr().err
    # the workers started as the index was built, never taken, are ended with the command
    assert main(["lint", str(corpus), "--compare"]) == 2  # no candidate
    assert "--rules" in capsys.readouterr().err
    assert isolated._started == []


HOSTILE = '[[no-banned-phrases.pattern]]\nregex = "(\\\\w+\\\\s?)*$"\nreason = "r"\n'


def _lint_compare(corpus: Path, rules: Path, env: dict[str, str] | None = None):
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "trajectory_review.tools.cli", "lint", str(corpus),
         "--rules", str(rules), "--compare", "--fail-on", "never"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_a_backtracking_candidate_is_compared_like_any_other(corpus, tmp_path):
    """`lint --compare` with `(\\w+\\s?)*$` hung without end under Python's re."""
    done = _lint_compare(corpus, candidate(tmp_path, HOSTILE))
    assert done.returncode == 0, done.stderr
    assert "no-banned-phrases" in done.stdout and "Changed answers" in done.stdout


def test_a_comparison_past_its_time_limit_stops_in_one_line_and_reports_nothing(corpus, tmp_path):
    done = _lint_compare(
        corpus, candidate(tmp_path, HOSTILE), {"TRAJECTORY_WHATIF_SECONDS": "0.01"}
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "stopped at its 0.01 s limit (TRAJECTORY_WHATIF_SECONDS)" in done.stderr


def test_a_what_if_run_never_judges_in_the_calling_process(corpus, tmp_path, monkeypatch):
    """The candidate's checks run in worker processes of their own, however few the
    conversations: a check called here would fail the run."""
    import trajectory_review.rules.whatif as whatif

    def here(*args, **kw):
        raise AssertionError("judged in the server's own process")

    monkeypatch.setattr(whatif, "check", here)
    reader = TraceReader.open([str(corpus)])
    w = what_if(reader, load_rules(), load_rules(candidate(tmp_path, HOSTILE)), only=None)
    assert w.answers > 0
