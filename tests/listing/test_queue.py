"""QA's queue over the catalog: which answers are done, "k of N reviewed", and the next
answer nobody has finished, under the list's filters."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trajectory_review.listing.catalog import build_catalog
from trajectory_review.listing.filters import Filters
from trajectory_review.listing.queries import Catalog
from trajectory_review.listing.queue import failing_rules, next_undone, progress
from trajectory_review.listing.urls import link_query, parse_link
from trajectory_review.model.reader import TraceReader
from trajectory_review.reviews.log import ReviewEvent, ReviewLog
from trajectory_review_bench.generate import generate

QUEUE = Filters(view="flagged")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Catalog:
    root = tmp_path_factory.mktemp("queue")
    generate(root / "traces", conversations=40, seed=11)
    return build_catalog(TraceReader.open([root / "traces"], cache=False))


def keys(catalog: Catalog, f: Filters) -> list[tuple[str, int]]:
    rows = catalog.page(f, 100).rows
    return [
        (str(c), int(e)) for c, e in zip(rows["conversation_id"], rows["exchange"], strict=True)
    ]


def with_done(catalog: Catalog, log: ReviewLog, f: Filters = QUEUE) -> Filters:
    state = log.state()
    return replace(f, done=state.done_answers(failing_rules(catalog, state.judged())))


def test_an_answer_is_done_once_every_rule_it_fails_has_a_verdict(catalog, tmp_path):
    queue = keys(catalog, QUEUE)
    failing = failing_rules(catalog, queue)
    two = next(k for k in queue if len(failing[k]) == 2)  # fails two rules
    log = ReviewLog(tmp_path / "r.jsonl")
    first, second = failing[two]
    log.append(ReviewEvent("verdict", two[0], "ana", two[1], rule=first, verdict="correct"))
    assert two not in with_done(catalog, log).done  # one flag still waits
    assert log.state().answer_state(two, failing[two]) == "to do"
    log.append(ReviewEvent("verdict", two[0], "bo", two[1], rule=second, verdict="false_positive"))
    assert two in with_done(catalog, log).done
    assert log.state().answer_state(two, failing[two]) == "done"


def test_done_answers_leave_the_queue_and_come_back_when_asked_or_reopened(catalog, tmp_path):
    queue = keys(catalog, QUEUE)
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(ReviewEvent("looks_right", queue[0][0], "ana", queue[0][1]))
    f = with_done(catalog, log)
    assert keys(catalog, f) == queue[1:]
    assert progress(catalog, f) == progress(catalog, replace(f, show_done=True))
    assert (progress(catalog, f).done, progress(catalog, f).total) == (1, len(queue))
    assert keys(catalog, replace(f, show_done=True)) == queue
    log.append(ReviewEvent("reopen", queue[0][0], "bo", queue[0][1]))
    f = with_done(catalog, log)
    assert keys(catalog, f) == queue and progress(catalog, f).done == 0
    assert log.state().answer_state(queue[0], ["any-rule"]) == "to do"


def test_next_undone_skips_what_others_finished_and_wraps_around(catalog, tmp_path):
    queue = keys(catalog, QUEUE)
    log = ReviewLog(tmp_path / "r.jsonl")
    for k in (queue[1], queue[2]):  # a colleague finished the next two
        log.append(ReviewEvent("looks_right", k[0], "bo", k[1]))
    f = with_done(catalog, log)
    assert next_undone(catalog, f, queue[0]) == queue[3]
    assert next_undone(catalog, f, queue[-1]) == queue[0]  # past the end: from the top
    for k in queue:
        log.append(ReviewEvent("looks_right", k[0], "bo", k[1]))
    assert next_undone(catalog, with_done(catalog, log), queue[0]) is None


def test_progress_follows_the_lists_filters(catalog, tmp_path):
    queue = keys(catalog, QUEUE)
    failing = failing_rules(catalog, queue)
    rule = failing[queue[0]][0]
    log = ReviewLog(tmp_path / "r.jsonl")
    log.append(ReviewEvent("looks_right", queue[0][0], "ana", queue[0][1]))
    f = with_done(catalog, log, replace(QUEUE, rule=rule))
    expected = sum(1 for k in queue if rule in failing[k])
    assert (progress(catalog, f).done, progress(catalog, f).total) == (1, expected)


def test_the_done_toggle_is_part_of_the_link_in_the_queue_only():
    shown = replace(QUEUE, show_done=True)
    assert "done=1" in link_query(shown)
    assert parse_link(link_query(shown)).filters == shown
    assert "done=" not in link_query(replace(shown, view="answers"))
