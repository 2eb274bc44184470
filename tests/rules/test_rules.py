"""The reply rules (docs/spec.md §6): every must-fire and must-not-fire sentence, the
URL boundary cases, metric versus gate, report versus enforce, and the harness text."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_review.rules.checks import cites
from trajectory_review.rules.lint import format_report, lint, score
from trajectory_review.rules.registry import (
    RULES,
    RulesError,
    Source,
    load_rules,
    profile_path,
    rules_from_text,
    source_from_result,
)

CFG = load_rules()
CK = load_rules(profile_path("copilotkit"))
PAD = " ".join(["filler"] * 70)  # past the 60-word handoff cap
SECTION = "https://docs.copilotkit.ai/reference"


def result(reply: str, sources=(), cfg=CFG, rule: str = ""):
    return {r.rule: r for r in lint(reply, list(sources), cfg).results}[rule]


def src(*urls: str, text: str = "retrieved text") -> Source:
    return Source(text, tuple(urls))


@pytest.mark.parametrize(
    "sentence",
    [
        "Great question! Here is how it works.",
        "Thanks for the detailed report, it helps.",
        "Excellent catch, that is a bug.",
        "Here is what I can't do with this tool.",
        "I don't have access to your deployment logs.",
        "I haven't run the code, but it should work.",
        "I haven't looked at the implementation of the hook.",
        "I haven't inspected the codebase yet.",
        "To be clear about my limits: I only read the docs.",
        "I can't see the thread you mention.",
        "In the future, please include a reproduction.",
    ],
)
def test_banned_phrases_fire(sentence):
    r = result(sentence + " " + PAD, rule="no-banned-phrases")
    assert not r.passed and r.applicable and r.blocks_publish and r.evidence


@pytest.mark.parametrize(
    "sentence",
    [
        "I haven't run the repro yet — can you share the code you used?",
        "I haven't run into this, but the implementation forwards headers only for stdio",
        "You haven't inspected the source here",
        "I haven't been able to reproduce it with the code you posted",
        "To be clear about the behaviour: the hook re-renders on every message.",
    ],
)
def test_reporter_voice_sentences_do_not_fire(sentence):
    r = result(sentence, rule="no-banned-phrases")
    assert r.passed and r.detail == "" and r.evidence == ()


@pytest.mark.parametrize(
    "reply,source,expected",
    [
        (f"See {SECTION}.", f"{SECTION}/", True),  # trailing slash on the source
        (f"See {SECTION}/ for details", SECTION, True),  # trailing slash in the reply
        (f"See [the docs]({SECTION}/).", f"{SECTION}/", True),  # markdown link, both slashed
        (f"See [the docs]({SECTION}).", SECTION, True),
        (f"See {SECTION}?tab=hooks", f"{SECTION}/", True),  # query
        (f"See {SECTION}/?tab=hooks", SECTION, True),
        (f"See {SECTION}#useCopilotChat", SECTION, True),  # anchor
        ("See HTTPS://Docs.CopilotKit.AI/reference now", SECTION, True),  # scheme/host case
        (f"See {SECTION}/hooks/useCopilotFabricated", SECTION, False),  # invented path
        (f"See {SECTION}s", SECTION, False),  # a longer word is another path
        ("See https://docs.copilotkit.ai/Reference", SECTION, False),  # path case matters
    ],
)
def test_url_boundary_matching(reply, source, expected):
    assert cites(reply, source) is expected


def test_long_reply_citing_a_retrieved_url_passes():
    r = result(f"Read {SECTION}/ first. {PAD}", [src(SECTION)], rule="cites-or-is-a-short-handoff")
    assert r.passed and r.applicable


def test_laundered_url_under_a_retrieved_section_fails():
    reply = f"Use {SECTION}/hooks/useCopilotFabricated as shown. {PAD}"
    r = result(reply, [src(SECTION)], rule="cites-or-is-a-short-handoff")
    assert not r.passed and r.blocks_publish
    assert r.evidence == (f"{SECTION}/hooks/useCopilotFabricated",)


def test_zero_retrieval_long_reply_still_fails():
    r = result(PAD, [], rule="cites-or-is-a-short-handoff")
    assert r.applicable and not r.passed and "no retrieved source" in r.detail


def test_urlless_retrieval_makes_citing_not_applicable():
    r = result(PAD, [src(text="plain text fallback")], rule="cites-or-is-a-short-handoff")
    assert not r.applicable and r.passed and not r.blocks_publish


def test_short_handoff_passes_without_citing():
    r = result(
        "I'll hand this to the team; they will follow up today.",
        [src(SECTION)],
        rule="cites-or-is-a-short-handoff",
    )
    assert r.passed and r.applicable


def test_one_unsourced_identifier_fails_the_metric_but_does_not_collapse():
    verdict = lint(
        "Call `useCopilotChat` with the `useCopilotFabricated` option set to true for this.",
        [src(text="useCopilotChat docs")],
        CK,
    )
    r = {x.rule: x for x in verdict.results}["grounded-identifiers"]
    assert not r.passed and not r.blocks_publish
    assert "below the suppression threshold" in r.detail and "`useCopilotFabricated`" in r.detail
    assert not verdict.would_collapse


def test_two_unsourced_identifiers_collapse():
    verdict = lint(
        "Call `useCopilotFabricated` and `CopilotInvented` before you render anything.",
        [src(text="useCopilotChat docs")],
        CK,
    )
    assert verdict.would_collapse and verdict.failed == ("grounded-identifiers",)


def test_identifiers_inside_urls_and_package_specifiers_are_not_candidates():
    reply = (
        f"See `{SECTION}/useCopilotNope` and install `@copilotkit/react-core`; "
        "then call `useCopilotChat()` and `<CopilotKit />`."
    )
    r = result(reply, [src(text="useCopilotChat CopilotKit")], CK, "grounded-identifiers")
    assert r.passed


def test_data_profile_grounds_backticked_names_in_tool_results():
    reply = "The `plot_id` column joins `trees` to `stand_age` in the warehouse today."
    sources = [
        source_from_result([{"plot_id": 1, "stand_age": 40}]),
        source_from_result("from trees"),
    ]
    assert result(reply, sources, rule="grounded-identifiers").passed


def test_hedged_names_fire():
    r = result(
        "Use `useCopilotAction` or the equivalent hook for this case.", rule="no-hedged-names"
    )
    assert not r.passed and r.evidence == ("or the equivalent",)


def test_dead_package_needs_live_package_and_migration_framing():
    mixed = "Install `@copilotkit/react-core` and also add `@copilotkitnext/react` for more."
    migration = (
        "`@copilotkitnext/react` was merged into `@copilotkit/react-core`; switch the import."
    )
    alone = "Add `@copilotkitnext/react` to your project for the new surface."
    assert not result(mixed, cfg=CK, rule="no-dead-package").passed
    assert result(migration, cfg=CK, rule="no-dead-package").passed
    assert not result(alone, cfg=CK, rule="no-dead-package").passed


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("@aAiIkKsSnx\u0131\u017f\u212a\u0130 -"), max_size=12),
    st.text(alphabet=st.sampled_from("@aAiIkKsSnx\u0131\u017f\u212a\u0130 -"), max_size=30),
)
def test_a_dead_package_is_named_in_any_case_as_a_case_blind_pattern_finds_it(name, reply):
    """Named in a reply as Python's case-blind search finds it, on ASCII and off it
    (the dotless i, the long s and the Kelvin sign match i, s and k there)."""
    if not name.strip():
        return
    cfg = rules_from_text(f"[no-dead-package]\ndead = [{json.dumps(name)}]\n", "a profile")
    expected = re.search(re.escape(name), reply, re.I) is not None
    assert (not result(reply, cfg=cfg, rule="no-dead-package").passed) == expected


def test_dead_package_rule_is_not_applicable_without_configuration(tmp_path):
    f = tmp_path / "r.toml"
    f.write_text("[no-dead-package]\ndead = []\n")
    r = result("anything at all goes here in this reply", cfg=load_rules(f), rule="no-dead-package")
    assert not r.applicable and not r.blocks_publish


def test_says_something_counts_words():
    r = result("Too short.", rule="says-something")
    assert not r.passed and r.detail == "only 2 words (at least 8)"
    assert result("", rule="says-something").detail == "only 0 words (at least 8)"


def test_every_check_returns_one_result_per_rule_in_order():
    assert [r.rule for r in lint("x", []).results] == list(RULES)


def test_report_mode_publishes_and_enforce_withholds():
    report = lint("Great question!", [], CFG, mode="report")
    enforce = lint("Great question!", [], CFG, mode="enforce")
    assert report.publish and report.would_collapse
    assert not enforce.publish and enforce.would_collapse
    assert enforce.failed == report.failed


def test_enforce_never_counts_not_applicable_rules():
    verdict = lint(PAD, [src(text="no urls")], CFG, mode="enforce")
    assert verdict.publish and not verdict.would_collapse


def test_harness_report_strings():
    good = lint("The governed measure reports canopy cover as an acre weighted share.", []).results
    bad = lint("Great question! canopy is fine here and that is all.", []).results
    report = score([("c1 #1", good), ("c2 #3", bad)])
    text = format_report(report)
    assert text.startswith("1/2 answers clean\n\n")
    assert "  ok   says-something: 2/2\n" in text
    assert "  FAIL no-banned-phrases: 1/2\n" in text
    assert "Failing answers:\n  c2 #3\n    - no-banned-phrases: praise opener\n" in text


def test_harness_prints_na_for_a_rule_that_applied_nowhere_and_never_lists_it(tmp_path):
    f = tmp_path / "r.toml"
    f.write_text("[no-dead-package]\ndead = []\n[grounded-identifiers]\nshapes = []\n")
    cfg = load_rules(f)
    results = lint(PAD, [src(text="no urls")], cfg).results
    text = format_report(score([("c1 #1", results)]))
    assert "  n/a  no-dead-package: 0/0\n" in text
    assert "  n/a  cites-or-is-a-short-handoff: 0/0\n" in text
    assert "Failing answers" not in text


def test_scoring_an_empty_set_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        score([])


@pytest.mark.parametrize(
    "content,message",
    [
        ("[says-something]\nmin_word = 3\n", "unknown key 'min_word' in [says-something]"),
        ("[made-up]\nx = 1\n", "unknown rule section [made-up]"),
        (
            "[grounded-identifiers]\nshapes = ['(unclosed']\n",
            "[grounded-identifiers] shapes: bad regex",
        ),
        ("[[no-banned-phrases.pattern]]\nregex = '[x'\nreason = 'r'\n", "bad regex"),
        ("not = [toml", "not valid TOML"),
    ],
)
def test_bad_rules_files_name_the_file_and_key(tmp_path, content, message):
    f = tmp_path / "rules.toml"
    f.write_text(content)
    with pytest.raises(RulesError) as exc:
        load_rules(f)
    assert str(f) in str(exc.value) and message in str(exc.value)


def test_sources_collect_urls_from_nested_results():
    s = source_from_result(
        {"hits": [{"url": "https://a.example/x", "t": "see https://b.example/y."}]}
    )
    assert s.urls == ("https://a.example/x", "https://b.example/y")


def test_a_new_rule_is_one_registered_function_with_its_settings(tmp_path):
    from trajectory_review.rules import registry
    from trajectory_review.rules.registry import Key, check, result, rule

    @rule("no-shouting", max_caps=Key(3, "int"))
    def no_shouting(reply, sources, k):
        caps = sum(1 for w in reply.split() if w.isupper() and len(w) > 1)
        return result("no-shouting", caps <= k.max_caps, f"{caps} shouted words")

    try:
        assert registry.RULES[-1] == "no-shouting"  # listed, in report order, last
        profile = tmp_path / "rules.toml"
        profile.write_text("[no-shouting]\nmax_caps = 1\n")
        cfg = load_rules(profile)
        assert cfg.of("no-shouting").max_caps == 1 and load_rules().of("no-shouting").max_caps == 3
        results = check("THIS IS LOUD", [], cfg)
        assert [r.rule for r in results][-1] == "no-shouting" and not results[-1].passed
        profile.write_text("[no-shouting]\nmax_capz = 1\n")
        with pytest.raises(RulesError, match="unknown key 'max_capz' in \\[no-shouting\\]"):
            load_rules(profile)
    finally:
        del registry.REGISTRY["no-shouting"]
        registry.RULES.remove("no-shouting")


def _one_by_one(cfg):
    """The same profile with the patterns' alternation switched off."""
    from dataclasses import replace
    from types import SimpleNamespace

    from trajectory_review.rules.registry import Patterns

    slow = Patterns(CFG.values["no-banned-phrases"].pattern)
    slow.any = None
    values = dict(cfg.values)
    values["no-banned-phrases"] = SimpleNamespace(**{**vars(cfg.values["no-banned-phrases"]),
                                                     "pattern": slow})  # fmt: skip
    return replace(cfg, values=values)


@pytest.mark.parametrize(
    "reply",
    [
        "Great question! Great question! Thanks for the report, I haven't run the code.",
        "great questionnaire, thanks for the detailed report",
        "Nothing banned here at all, only prose about canopy cover and plots.",
        "",
    ],
)
def test_banned_phrases_find_the_same_through_the_alternation(reply):
    assert CFG.values["no-banned-phrases"].pattern.any is not None  # the fast path is on
    fast = result(reply + " " + PAD, rule="no-banned-phrases")
    slow = result(reply + " " + PAD, cfg=_one_by_one(CFG), rule="no-banned-phrases")
    assert (fast.passed, fast.detail, fast.evidence) == (slow.passed, slow.detail, slow.evidence)


@pytest.mark.parametrize(
    "regex, why",
    [
        ("(very) \\\\1", "invalid escape sequence"),
        ("\\\\btrees\\\\b(?!_legacy)", "invalid perl operator"),
        ("(?<=a)b", "invalid perl operator"),
    ],
)
def test_a_pattern_re2_cannot_run_in_linear_time_is_refused_in_one_line(tmp_path, regex, why):
    f = tmp_path / "r.toml"
    f.write_text(f'[[no-banned-phrases.pattern]]\nregex = "{regex}"\nreason = "r"\n')
    with pytest.raises(RulesError) as exc:
        load_rules(f)
    said = str(exc.value)
    assert "\n" not in said and why in said and "RE2" in said and "pattern 1" in said


def test_a_backtracking_pattern_judges_long_prose_at_once(tmp_path):
    """`(\\w+\\s?)*$` backtracked without end on ordinary prose under Python's re (and
    held the GIL meanwhile): on RE2 the answer is judged as any other is."""
    import threading

    f = tmp_path / "r.toml"
    f.write_text('[[no-banned-phrases.pattern]]\nregex = "(\\\\w+\\\\s?)*$"\nreason = "r"\n')
    cfg = load_rules(f)
    reply = "The canopy cover of plot twelve rose between the two visits, " * 400 + "!"
    out: list = []
    worker = threading.Thread(
        target=lambda: out.append(result(reply, cfg=cfg, rule="no-banned-phrases"))
    )
    worker.start()
    worker.join(60)  # under re: no end in sight; here: milliseconds
    assert out and not out[0].passed  # it matches the empty end of any text


def test_a_retrieved_url_longer_than_any_kept_is_cited_as_a_short_one_is():
    """Needles of ordinary URLs are remembered across answers; a very long one is worked
    out each time, and cites the same."""
    long_url = "https://Example.ORG/" + "a" * 5000
    for url in (long_url, "https://Example.ORG/plots"):
        assert cites(f"See {url.lower()} for it.", url)
        assert not cites(f"See {url.lower()}x for it.", url)
