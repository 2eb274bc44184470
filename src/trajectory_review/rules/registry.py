"""The reply rules: one module for the harness (scores many replies), the linter (judges
one draft) and the QA queue, so the thing measured and the thing enforced never drift.

Three states per result: `applicable` (could the rule be evaluated at all), `passed` (the
metric) and `blocks_publish` (the gate). "Had nothing citable" is not "did not cite": a
not-applicable result is never a failure and is left out of pass rates.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

RULES = (
    "says-something",
    "grounded-identifiers",
    "cites-or-is-a-short-handoff",
    "no-banned-phrases",
    "no-hedged-names",
    "no-dead-package",
)


class RulesError(ValueError):
    """A rules file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class RuleResult:
    rule: str
    passed: bool
    applicable: bool
    blocks_publish: bool
    detail: str = ""
    evidence: tuple[str, ...] = ()  # the exact words that triggered the rule

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "passed": self.passed,
            "applicable": self.applicable,
            "blocks_publish": self.blocks_publish,
            "detail": self.detail,
        }

    @property
    def failed(self) -> bool:
        return self.applicable and not self.passed


@dataclass(frozen=True)
class Source:
    text: str
    urls: tuple[str, ...]


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    reason: str


@dataclass(frozen=True)
class RuleConfig:
    min_words: int = 8
    shapes: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    block_at: int = 2
    handoff_word_cap: int = 60
    patterns: tuple[Pattern, ...] = ()
    hedges: tuple[str, ...] = ()
    dead: tuple[str, ...] = ()
    live: tuple[re.Pattern[str], ...] = ()
    migration: tuple[str, ...] = ()
    source: str = "the shipped default profile"
    fingerprint: str = ""  # the configuration's text: what a cached verdict depends on


# -- configuration --------------------------------------------------------------------------

_KEYS: dict[str, set[str]] = {
    "says-something": {"min_words"},
    "grounded-identifiers": {"shapes", "exclude", "block_at"},
    "cites-or-is-a-short-handoff": {"handoff_word_cap"},
    "no-banned-phrases": {"pattern"},
    "no-hedged-names": {"phrases"},
    "no-dead-package": {"dead", "live", "migration"},
}


def _default_text() -> str:
    return (
        resources.files("trajectory_review")
        .joinpath("rules/profiles/default.toml")
        .read_text(encoding="utf-8")
    )


def profile_path(name: str) -> Path:
    return Path(str(resources.files("trajectory_review").joinpath(f"rules/profiles/{name}.toml")))


def load_rules(path: str | Path | None = None) -> RuleConfig:
    """The shipped defaults, overridden key by key by the deployment's file, if any."""
    data = _parse(_default_text(), "default rules")
    label = "the shipped default profile"
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise RulesError(f"{p}: cannot read rules file ({exc.strerror})") from None
        override = _parse(text, str(p))
        for section, values in override.items():
            data.setdefault(section, {}).update(values)
        label = str(p)
    return _build(data, label, json.dumps(data, sort_keys=True, default=str))


def _parse(text: str, name: str) -> dict[str, dict[str, Any]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{name}: not valid TOML ({exc})") from None
    for section, values in data.items():
        if section not in _KEYS:
            raise RulesError(f"{name}: unknown rule section [{section}]")
        if not isinstance(values, dict):
            raise RulesError(f"{name}: [{section}] must be a table")
        for key in values:
            if key not in _KEYS[section]:
                raise RulesError(f"{name}: unknown key '{key}' in [{section}]")
    return data


def _build(data: dict[str, dict[str, Any]], name: str, fingerprint: str = "") -> RuleConfig:
    def get(section: str, key: str, default: Any) -> Any:
        return data.get(section, {}).get(key, default)

    def regexes(section: str, key: str, flags: int = 0) -> tuple[re.Pattern[str], ...]:
        values = get(section, key, [])
        if not isinstance(values, list):
            raise RulesError(f"{name}: [{section}] {key} must be a list")
        return tuple(_compile(v, name, section, key, flags) for v in values)

    def integer(section: str, key: str, default: int) -> int:
        v = get(section, key, default)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise RulesError(f"{name}: [{section}] {key} must be a non-negative integer")
        return v

    def strings(section: str, key: str) -> tuple[str, ...]:
        v = get(section, key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise RulesError(f"{name}: [{section}] {key} must be a list of strings")
        return tuple(v)

    patterns = []
    for i, entry in enumerate(get("no-banned-phrases", "pattern", [])):
        if not isinstance(entry, dict) or set(entry) - {"regex", "reason"} or "regex" not in entry:
            raise RulesError(
                f"{name}: [no-banned-phrases] pattern {i + 1} needs regex (and reason) only"
            )
        patterns.append(
            Pattern(
                _compile(entry["regex"], name, "no-banned-phrases", f"pattern {i + 1}", re.I),
                str(entry.get("reason") or "banned phrase"),
            )
        )
    return RuleConfig(
        min_words=integer("says-something", "min_words", 8),
        shapes=regexes("grounded-identifiers", "shapes"),
        exclude=regexes("grounded-identifiers", "exclude"),
        block_at=integer("grounded-identifiers", "block_at", 2),
        handoff_word_cap=integer("cites-or-is-a-short-handoff", "handoff_word_cap", 60),
        patterns=tuple(patterns),
        hedges=strings("no-hedged-names", "phrases"),
        dead=strings("no-dead-package", "dead"),
        live=regexes("no-dead-package", "live", re.I),
        migration=strings("no-dead-package", "migration"),
        source=name,
        fingerprint=fingerprint,
    )


def _compile(value: Any, name: str, section: str, key: str, flags: int) -> re.Pattern[str]:
    if not isinstance(value, str):
        raise RulesError(f"{name}: [{section}] {key}: {value!r} is not a string")
    try:
        return re.compile(value, flags)
    except re.error as exc:
        raise RulesError(f"{name}: [{section}] {key}: bad regex {value!r} ({exc})") from None


# -- inputs ---------------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+", re.I)


def words(text: str) -> int:
    return len(text.split())


def source_from_result(result: Any) -> Source:
    """A tool result as a source: its text (or compact JSON) and every URL in it."""
    if isinstance(result, str):
        text = result
    else:
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    urls: list[str] = []
    for s in _strings(result):
        urls.extend(u.rstrip(".,;") for u in _URL.findall(s))
    return Source(text, tuple(dict.fromkeys(urls)))


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# -- the six rules ---------------------------------------------------------------------------


def _result(
    rule: str,
    passed: bool,
    detail: str = "",
    *,
    applicable: bool = True,
    blocks: bool | None = None,
    evidence: Sequence[str] = (),
) -> RuleResult:
    if not applicable:
        return RuleResult(rule, True, False, False, detail, ())
    blocks_publish = (not passed) if blocks is None else blocks
    return RuleResult(
        rule,
        passed,
        True,
        blocks_publish,
        "" if passed else detail,
        tuple(evidence) if not passed else (),
    )


def says_something(reply: str, cfg: RuleConfig) -> RuleResult:
    n = words(reply)
    return _result(
        "says-something",
        n >= cfg.min_words,
        f"only {n} word{'s' if n != 1 else ''} (at least {cfg.min_words})",
    )


_BACKTICK = re.compile(r"`([^`\n]+)`")


def identifier_candidates(reply: str, cfg: RuleConfig) -> list[str]:
    text = _URL.sub(lambda m: " " * len(m.group(0)), reply)  # a name in a link is no name
    out: list[str] = []
    for token in _BACKTICK.findall(text):
        token = _bare_name(token)
        if not token:
            continue
        for seg in token.split("."):
            seg = seg.strip()
            if not seg or any(x.search(seg) for x in cfg.exclude):
                continue
            if any(s.search(seg) for s in cfg.shapes) and seg not in out:
                out.append(seg)
    return out


# A backticked span longer than this is code, not a name. The cap also bounds the work
# the configured identifier shapes (deployment regexes) can do on text a model wrote.
MAX_IDENTIFIER = 256


def _bare_name(token: str) -> str:
    """`<Name />` -> Name, `name(args)` -> name; "" for a span too long to be a name.

    String operations, not regular expressions: the patterns this replaces
    (`^<\\s*|\\s*/?\\s*>$`, `\\(.*\\)$`) backtracked cubically on a run of spaces
    inside backticks (4,000 spaces: 56 s), and Python's `re` holds the GIL meanwhile, so
    one answer froze the whole server."""
    token = token.strip()
    if len(token) > MAX_IDENTIFIER:
        return ""
    if token.startswith("<"):
        token = token[1:].lstrip()
    if token.endswith(">"):
        token = token[:-1].rstrip()
        if token.endswith("/"):
            token = token[:-1].rstrip()
    if token.endswith(")") and "(" in token:
        token = token[: token.index("(")]
    return token


def grounded_identifiers(reply: str, sources: Sequence[Source], cfg: RuleConfig) -> RuleResult:
    rule = "grounded-identifiers"
    if not cfg.shapes:
        return _result(rule, True, "no identifier shapes configured", applicable=False)
    haystack = [(s.text + " " + " ".join(s.urls)).lower() for s in sources]
    unsourced = [
        c for c in identifier_candidates(reply, cfg) if not any(c.lower() in h for h in haystack)
    ]
    n = len(unsourced)
    detail = (
        "unsourced identifier"
        + ("s" if n != 1 else "")
        + ": "
        + ", ".join(f"`{u}`" for u in unsourced)
    )
    if 0 < n < cfg.block_at:
        detail += f" (below the suppression threshold of {cfg.block_at})"
    return _result(rule, n == 0, detail, blocks=n >= cfg.block_at, evidence=unsourced)


_AUTHORITY = re.compile(r"(https?://)([^/\s?#]+)", re.I)
_BOUNDARY = set(")]}.,;\"'<>#?")


def _lower_authority(url: str) -> str:
    return _AUTHORITY.sub(lambda m: m.group(1).lower() + m.group(2).lower(), url)


def cites(reply: str, url: str) -> bool:
    """Does the reply cite this retrieved URL, ending at a boundary (not a longer path)?"""
    return _cited_in(_lower_authority(reply), url)


def _cited_in(hay: str, url: str) -> bool:
    """`cites` on a reply whose authorities are already lower-cased (done once per reply,
    not once per retrieved URL: a tool result can carry thousands of URLs)."""
    needle = _lower_authority(url).rstrip("/#?")
    if not needle:
        return False
    start = hay.find(needle)
    while start >= 0:
        end = start + len(needle)
        if end < len(hay) and hay[end] == "/":
            end += 1  # `…/reference/` cites `…/reference`
        if end == len(hay) or hay[end].isspace() or hay[end] in _BOUNDARY:
            return True
        start = hay.find(needle, start + 1)
    return False


def cites_or_is_a_short_handoff(
    reply: str, sources: Sequence[Source], cfg: RuleConfig
) -> RuleResult:
    rule = "cites-or-is-a-short-handoff"
    n = words(reply)
    short = n <= cfg.handoff_word_cap
    urls = [u for s in sources for u in s.urls]
    if sources and not urls and not short:
        return _result(
            rule, True, "retrieved sources carry no URL: nothing could be cited", applicable=False
        )
    hay = _lower_authority(reply)
    cited = [u for u in urls if _cited_in(hay, u)]
    if short or cited:
        return _result(rule, True)
    if not sources:
        detail = f"{n} words built on no retrieved source (handoff cap {cfg.handoff_word_cap})"
    else:
        detail = (
            f"{n} words and cites none of the {len(urls)} retrieved URL"
            f"{'s' if len(urls) != 1 else ''} (handoff cap {cfg.handoff_word_cap})"
        )
    shaped = [m.group(0) for m in _URL.finditer(reply)]
    return _result(rule, False, detail, evidence=shaped)


def no_banned_phrases(reply: str, cfg: RuleConfig) -> RuleResult:
    hits = [(p.reason, m.group(0)) for p in cfg.patterns for m in p.regex.finditer(reply)]
    reasons = list(dict.fromkeys(r for r, _ in hits))
    return _result("no-banned-phrases", not hits, "; ".join(reasons), evidence=[h for _, h in hits])


def no_hedged_names(reply: str, cfg: RuleConfig) -> RuleResult:
    low = reply.lower()
    hits = [h for h in cfg.hedges if h.lower() in low]
    evidence = [m.group(0) for h in hits for m in re.finditer(re.escape(h), reply, re.I)]
    return _result(
        "no-hedged-names",
        not hits,
        "hedged API name: " + ", ".join(f'"{h}"' for h in hits),
        evidence=evidence,
    )


def no_dead_package(reply: str, cfg: RuleConfig) -> RuleResult:
    rule = "no-dead-package"
    if not cfg.dead:
        return _result(rule, True, "no dead package configured", applicable=False)
    named = [d for d in cfg.dead if re.search(re.escape(d), reply, re.I)]
    if not named:
        return _result(rule, True)
    live = any(p.search(reply) for p in cfg.live)
    framing = [m for m in cfg.migration if m.lower() in reply.lower()]
    if live and framing:
        return _result(rule, True)
    why = "named without migration framing" if live else "named as if current"
    return _result(rule, False, f"dead package {', '.join(named)} {why}", evidence=named)


def check(reply: str, sources: Sequence[Source], cfg: RuleConfig) -> list[RuleResult]:
    """Exactly one result per rule, in the fixed order."""
    return [
        says_something(reply, cfg),
        grounded_identifiers(reply, sources, cfg),
        cites_or_is_a_short_handoff(reply, sources, cfg),
        no_banned_phrases(reply, cfg),
        no_hedged_names(reply, cfg),
        no_dead_package(reply, cfg),
    ]


# -- linter ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LintVerdict:
    publish: bool
    would_collapse: bool
    failed: tuple[str, ...]  # rules that are applicable and block publishing
    reasons: tuple[str, ...]
    results: tuple[RuleResult, ...]
    mode: str


def lint(
    reply: str, sources: Sequence[Source], cfg: RuleConfig | None = None, mode: str = "report"
) -> LintVerdict:
    """A verdict on one draft, never replacement text (the caller owns its handoff copy).
    Report mode changes nothing: it records what enforce mode would have withheld."""
    if mode not in ("report", "enforce"):
        raise ValueError(f"unknown lint mode: {mode}")
    results = tuple(check(reply, sources, cfg or load_rules()))
    broken = [r for r in results if r.applicable and r.blocks_publish]
    collapse = bool(broken)
    return LintVerdict(
        publish=True if mode == "report" else not collapse,
        would_collapse=collapse,
        failed=tuple(r.rule for r in broken),
        reasons=tuple(f"{r.rule}: {r.detail}" for r in broken),
        results=results,
        mode=mode,
    )


# -- harness ---------------------------------------------------------------------------------


@dataclass
class HarnessReport:
    cases: list[tuple[str, list[RuleResult]]]
    per_rule: dict[str, dict[str, int]] = field(default_factory=dict)
    clean: int = 0


def score(cases: Sequence[tuple[str, Sequence[RuleResult]]]) -> HarnessReport:
    if not cases:
        raise ValueError("no answers to score: an empty set is not a clean report")
    per_rule = {r: {"passed": 0, "total": 0} for r in RULES}
    clean = 0
    for _label, results in cases:
        for r in results:
            if r.applicable:
                per_rule[r.rule]["total"] += 1
                per_rule[r.rule]["passed"] += int(r.passed)
        clean += int(not any(r.failed for r in results))
    return HarnessReport([(label, list(res)) for label, res in cases], per_rule, clean)


def format_report(report: HarnessReport) -> str:
    lines = [f"{report.clean}/{len(report.cases)} answers clean", ""]
    for rule in RULES:
        t = report.per_rule[rule]
        status = "n/a " if t["total"] == 0 else ("ok  " if t["passed"] == t["total"] else "FAIL")
        lines.append(f"  {status} {rule}: {t['passed']}/{t['total']}")
    failing = [(label, [r for r in res if r.failed]) for label, res in report.cases]
    failing = [(label, fs) for label, fs in failing if fs]
    if failing:
        lines += ["", "Failing answers:"]
        for label, fs in failing:
            lines.append(f"  {label}")
            lines.extend(f"    - {r.rule}: {r.detail}" for r in fs)
    return "\n".join(lines) + "\n"
