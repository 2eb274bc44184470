"""QA with evidence (issue #36): intervals, agreement, samples the team shares."""

from __future__ import annotations

import pytest

from trajectory_review.reviews.log import ReviewEvent, ReviewLog
from trajectory_review.rules.evidence import (
    Estimate,
    agreement,
    cohen_kappa,
    disagreements,
    draw,
    rule_evidence,
    settles_in_force,
    standing,
    wilson,
)


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0),
     (1, 1, 0.2065, 1.0), (81, 263, 0.2553, 0.3662)],
)  # fmt: skip
def test_wilson_intervals_match_known_values(k, n, lo, hi):
    got = wilson(k, n)
    assert got is not None and got[0] == pytest.approx(lo, abs=1e-4)
    assert got[1] == pytest.approx(hi, abs=1e-4)
    assert wilson(0, 0) is None and Estimate(0, 0).text() == "no data yet"


def test_kappa_matches_a_hand_computed_table():
    # A yes / B yes 20, A yes / B no 5, A no / B yes 10, A no / B no 15: po 0.7, pe 0.5
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("y", "y")] * 4) is None  # one label throughout: undefined
    assert cohen_kappa([]) is None


def test_a_sample_is_the_same_for_every_session_and_after_a_restart(tmp_path):
    candidates = [(f"c{i}", 1 + i % 3, "rule-a" if i % 4 else "rule-b") for i in range(200)]
    first = draw(candidates, 30, seed=42)
    assert first == draw(list(reversed(candidates)), 30, seed=42)  # order does not matter
    assert len(first) == 30 and len(set(first)) == 30 and set(first) <= set(candidates)
    # stratified: each stratum its share (150 : 50 of 200 -> 22.5 : 7.5 of 30)
    assert sorted(sum(m[2] == s for m in first) for s in ("rule-a", "rule-b")) == [7, 23] or sorted(
        sum(m[2] == s for m in first) for s in ("rule-a", "rule-b")
    ) == [8, 22]
    log = ReviewLog(tmp_path / "r.jsonl")
    spec = {"kind": "flagged", "size": 30, "seed": 42, "stratify": "rule"}
    log.append(ReviewEvent("sample", "*", "ann", sample="s1", members=tuple(first), spec=spec))
    again = ReviewLog(tmp_path / "r.jsonl").state()  # a restart, another reviewer
    (stored,) = again.samples("flagged")
    assert list(stored.members) == first and stored.spec["seed"] == 42


def verdict(log, cid, who, v, settles=False, identity="authenticated"):
    log.append(ReviewEvent("verdict", cid, who, 1, "", "no-banned-phrases", v, settles=settles,
                           identity=identity))  # fmt: skip


def test_agreement_and_disagreements_follow_each_reviewers_latest_verdict(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    verdict(log, "a", "ann", "correct")
    verdict(log, "a", "bo", "correct")
    verdict(log, "b", "ann", "correct")
    verdict(log, "b", "bo", "false_positive")
    state = log.state()
    agree = agreement(state, ["no-banned-phrases"])["no-banned-phrases"]
    assert (agree.flags, agree.agreeing) == (2, 1)
    assert [d.key for d in disagreements(state)] == [("b", 1, "no-banned-phrases")]
    verdict(log, "b", "bo", "correct")  # bo changes their mind: counted once, the latest
    assert disagreements(log.state()) == []
    verdict(log, "c", "ann", "correct")
    verdict(log, "c", "bo", "false_positive")
    assert len(disagreements(log.state())) == 1
    verdict(log, "c", "lead", "false_positive", settles=True)  # a lead settles it
    assert disagreements(log.state()) == []


def _disputed(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    verdict(log, "c", "ann", "correct")
    verdict(log, "c", "bo", "false_positive")
    return log


def test_a_typed_name_never_settles(tmp_path):
    log = _disputed(tmp_path)
    verdict(log, "c", "lead", "false_positive", settles=True, identity="declared")
    assert len(disagreements(log.state())) == 1
    assert settles_in_force(log.state()) == {}


def test_nobody_settles_their_own_dispute(tmp_path):
    log = _disputed(tmp_path)
    verdict(log, "c", "ann", "correct", settles=True)
    assert len(disagreements(log.state())) == 1


def test_a_typed_name_is_not_the_signed_in_reviewer_of_that_name(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    verdict(log, "c", "alice", "correct")
    verdict(log, "c", "alice", "false_positive", identity="declared")  # someone typed "alice"
    state = log.state()
    (d,) = disagreements(state)  # two reviewers, not one who changed her mind
    assert [(v.author, v.identity) for v in d.verdicts] == [
        ("alice", "authenticated"),
        ("alice", "declared"),
    ]
    agree = agreement(state, ["no-banned-phrases"])["no-banned-phrases"]
    assert (agree.flags, agree.agreeing) == (1, 0)


def test_a_settle_older_than_the_reviewers_later_verdicts_decides_nothing(tmp_path):
    log = _disputed(tmp_path)
    verdict(log, "c", "lead", "false_positive", settles=True)
    assert standing(log.state())[("c", 1, "no-banned-phrases")] == "false_positive"
    verdict(log, "c", "ann", "correct")
    verdict(log, "c", "bo", "correct")  # both now agree, after the settle
    state = log.state()
    assert settles_in_force(state) == {}
    assert standing(state)[("c", 1, "no-banned-phrases")] == "correct"
    failing = {("c", 1): ("no-banned-phrases",)}
    ev = rule_evidence(state, ["no-banned-phrases"], failing)["no-banned-phrases"]
    assert (ev.by_choice.k, ev.by_choice.n) == (0, 1)  # the stale settle said false positive


def test_estimates_keep_sampled_flags_apart_from_those_opened_by_choice(tmp_path):
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(ReviewEvent("sample", "*", "ann", sample="s1",
                           members=(("a", 1, "x"), ("b", 1, "x")),
                           spec={"kind": "flagged", "size": 2}))  # fmt: skip
    log.append(ReviewEvent("sample", "*", "ann", sample="s2",
                           members=(("u1", 1, "none"), ("u2", 1, "none")),
                           spec={"kind": "unflagged", "size": 2}))  # fmt: skip
    verdict(log, "a", "ann", "correct")
    verdict(log, "b", "ann", "false_positive")
    verdict(log, "chosen", "ann", "false_positive")  # opened by choice
    log.append(ReviewEvent("spot", "u1", "ann", 1, verdict="missed", rule="no-banned-phrases"))
    log.append(ReviewEvent("spot", "u2", "ann", 1, verdict="looks_right"))
    failing = {("a", 1): ("no-banned-phrases",), ("b", 1): ("no-banned-phrases",),
               ("chosen", 1): ("no-banned-phrases",)}  # fmt: skip
    ev = rule_evidence(log.state(), ["no-banned-phrases"], failing)["no-banned-phrases"]
    assert (ev.sampled_precision.k, ev.sampled_precision.n) == (1, 2)
    assert (ev.by_choice.k, ev.by_choice.n) == (1, 1)
    assert (ev.miss_rate.k, ev.miss_rate.n) == (1, 2)


def test_sample_and_spot_events_are_checked_like_the_rest(tmp_path):
    import json

    log = ReviewLog(tmp_path / "r.jsonl")
    with pytest.raises(ValueError):
        log.append(ReviewEvent("spot", "a", "ann", 1, verdict="maybe"))
    bad = [
        {"type": "sample", "conversation_id": "*", "author": "a", "ts": "t", "id": "1",
         "sample": "s", "members": "all", "spec": {"kind": "flagged"}},
        {"type": "sample", "conversation_id": "*", "author": "a", "ts": "t", "id": "2",
         "sample": "s", "members": [["a", 1, "x"]], "spec": {"kind": "everything"}},
        {"type": "note", "conversation_id": "a", "author": "a", "ts": "t", "id": "3",
         "text": "", "members": [["a", 1, "x"]]},
        {"type": "note", "conversation_id": "a", "author": "a", "ts": "t", "id": "4",
         "text": "", "settles": True},
    ]  # fmt: skip
    with open(log.path, "a", encoding="utf-8") as fh:
        for line in bad:
            fh.write(json.dumps(line) + "\n")
    state = ReviewLog(log.path).state()
    assert state.events == [] and state.skipped_lines == 4


def test_the_reviewed_dataset_says_which_sample_an_answer_was_drawn_in(tmp_path, capsys):
    import json

    from tests.fixtures import A, Q, Recorder
    from trajectory_review.tools.cli import main

    r = Recorder()
    for cid in ("in-sample", "by-choice"):
        r.turn(cid, [Q("How?"), A("Great question! The plots were counted.")], tag="A")
    path = r.write(tmp_path / "t.jsonl")
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(ReviewEvent("sample", "*", "ann", sample="s9", members=(("in-sample", 1, "A"),),
                           spec={"kind": "flagged", "size": 1}))  # fmt: skip
    for cid in ("in-sample", "by-choice"):
        log.append(ReviewEvent("verdict", cid, "ann", 1, "", "no-banned-phrases", "correct"))
    assert main(["export", str(path), "--reviewed", "--review-log", str(log.path)]) == 0
    cases = {
        c["conversation_id"]: c for c in map(json.loads, capsys.readouterr().out.split("\n")[:-1])
    }
    assert cases["in-sample"]["sample"] == {"id": "s9", "stratum": "A"}
    assert cases["by-choice"]["sample"] is None
