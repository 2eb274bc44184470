"""The reply rules: one module for the harness (scores many replies), the linter (judges
one draft) and the QA queue, so the thing measured and the thing enforced never drift.

Three states per result: `applicable` (could the rule be evaluated at all), `passed` (the
metric) and `blocks_publish` (the gate). "Had nothing citable" is not "did not cite": a
not-applicable result is never a failure and is left out of pass rates.

A rule is one registered function (`rules/checks.py`), declaring its TOML keys with their
defaults once: the rule list, the report order, the configuration a profile may set and
its validation all derive from the registry. A new rule is one function and its test.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import orjson
from msgspec.structs import force_setattr

from trajectory_review.rules.patterns import (
    MAX_ENTRIES,
    Pattern,
    PatternError,
    Patterns,
    Regex,
    Regexes,
)
from trajectory_review.support.errors import Said


class RulesError(Said, ValueError):
    """A rules file that cannot be used; the message names the file and the key."""


class RuleResult(msgspec.Struct, frozen=True, gc=False):
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


def compact_json(value: Any) -> str:
    """A value's compact JSON exactly as the standard library writes it (what the rules
    have always searched), written by orjson where that is the same text: far faster,
    for every tool result a rule reads (docs/performance-log.md, "A tool result's JSON
    text").

    orjson writes it otherwise in three cases only, each leaving a mark in its text: a
    float below 1e-4 (`0.00001` and `1.5e-7` where Python writes `1e-05` and `1.5e-07`),
    and NaN or an infinity (`null`; only the standard library's parser reads them in,
    messages.loads). With a mark (or a value orjson refuses: an integer past 64 bits, a
    lone surrogate, nesting past its limit), the standard library writes it."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        text = None
    if text is None or _NOT_AS_ORJSON.search(text) is not None:
        text = _COMPACT.encode(value)
    return text


# where orjson's text may differ from the standard library's (compact_json); a string
# holding one of these only costs the slower writing
_NOT_AS_ORJSON = re.compile(r"\d[eE]-|0\.0000|null")
# made once: json.dumps given arguments made an encoder for each call
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class Source(msgspec.Struct, frozen=True, gc=False):
    """A tool result the rules check an answer against: the result, every URL in it, and
    its text (the result itself, or its compact JSON), written out when a rule first reads
    it (most answers name nothing the identifier rule looks up)."""

    result: Any
    urls: tuple[str, ...]
    _text: str | None = None  # kept once written, through force_setattr

    @property
    def text(self) -> str:
        text = self._text
        if text is None:
            result = self.result
            text = result if isinstance(result, str) else compact_json(result)
            force_setattr(self, "_text", text)
        return text

    def __eq__(self, other: object) -> bool:  # the text kept or not
        if not isinstance(other, Source):
            return NotImplemented
        return (self.result, self.urls) == (other.result, other.urls)

    def __hash__(self) -> int:
        return hash(self.urls)


# -- the registry -------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    """One setting of a rule: its default and how a profile's value is read."""

    default: Any
    kind: str  # int | strings | regexes | iregexes | patterns


CheckFn = Callable[[str, Sequence[Source], SimpleNamespace], RuleResult]


@dataclass(frozen=True)
class Rule:
    name: str
    check: CheckFn
    keys: dict[str, Key]


REGISTRY: dict[str, Rule] = {}
RULES: list[str] = []  # in report order: the order the rules were registered


def rule(name: str, **keys: Key) -> Callable[..., Any]:
    """Register a rule: `@rule("says-something", min_words=Key(8, "int"))`."""

    def register(fn: CheckFn) -> Callable[..., Any]:
        if name in REGISTRY:
            raise ValueError(f"reply rule registered twice: {name}")
        REGISTRY[name] = Rule(name, fn, keys)
        RULES.append(name)
        return fn

    return register


@dataclass(frozen=True)
class RuleConfig:
    """Every rule's settings, read and checked; `of(rule)` is what its check receives."""

    values: dict[str, SimpleNamespace] = field(default_factory=dict)
    source: str = "the shipped default profile"
    fingerprint: str = ""  # the configuration's text: what a cached verdict depends on

    def of(self, name: str) -> SimpleNamespace:
        return self.values[name]

    @cached_property
    def checks(self) -> tuple[tuple[CheckFn, SimpleNamespace], ...]:
        """Each rule's check with its settings, in report order: looked up once per
        profile instead of twice per rule per answer."""
        return tuple((REGISTRY[name].check, self.values[name]) for name in RULES)


def check(reply: str, sources: Sequence[Source], cfg: RuleConfig) -> list[RuleResult]:
    """Exactly one result per rule, in the fixed order."""
    return [fn(reply, sources, settings) for fn, settings in cfg.checks]


# -- configuration --------------------------------------------------------------------------


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
    if path is None:
        return rules_from_text(None, "the shipped default profile")
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesError(f"{p}: cannot read rules file ({exc.strerror})") from None
    return rules_from_text(text, str(p))


def rules_from_text(text: str | None, name: str) -> RuleConfig:
    """The shipped defaults overridden key by key by a profile's text (a file's, or one
    pasted into the app's What if tab); RulesError names `name` and the key."""
    data = _parse(_default_text(), "default rules")
    if text is not None:
        for section, values in _parse(text, name).items():
            data.setdefault(section, {}).update(values)
    return _build(data, name, json.dumps(data, sort_keys=True, default=str))


def _parse(text: str, name: str) -> dict[str, dict[str, Any]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{name}: not valid TOML ({exc})") from None
    for section, values in data.items():
        if section not in REGISTRY:
            raise RulesError(f"{name}: unknown rule section [{section}]")
        if not isinstance(values, dict):
            raise RulesError(f"{name}: [{section}] must be a table")
        for key in values:
            if key not in REGISTRY[section].keys:
                raise RulesError(f"{name}: unknown key '{key}' in [{section}]")
    return data


def _build(data: dict[str, dict[str, Any]], name: str, fingerprint: str = "") -> RuleConfig:
    values = {}
    for rule_name, r in REGISTRY.items():
        given = data.get(rule_name, {})
        values[rule_name] = SimpleNamespace(
            **{
                key: _read(given.get(key, spec.default), spec.kind, name, rule_name, key)
                for key, spec in r.keys.items()
            }
        )
    return RuleConfig(values, name, fingerprint)


def _read(value: Any, kind: str, name: str, section: str, key: str) -> Any:
    where = f"{name}: [{section}] {key}"
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise RulesError(f"{where} must be a non-negative integer")
        return value
    if kind == "strings":
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise RulesError(f"{where} must be a list of strings")
        return tuple(value)
    if kind in ("regexes", "iregexes"):
        if not isinstance(value, list):
            raise RulesError(f"{where} must be a list")
        _not_too_many(value, where)
        return Regexes(_compile(v, name, section, key, kind == "iregexes") for v in value)
    if kind == "patterns":  # [[section.pattern]] tables: regex + reason
        out = []
        entries = value if isinstance(value, list) else [value]
        _not_too_many(entries, where)
        for i, entry in enumerate(entries):
            wrong = not isinstance(entry, dict) or set(entry) - {"regex", "reason"}
            if wrong or "regex" not in entry:
                raise RulesError(f"{name}: [{section}] {key} {i + 1} needs regex (and reason) only")
            regex = _compile(entry["regex"], name, section, f"{key} {i + 1}", True)
            out.append(Pattern(regex, str(entry.get("reason") or "banned phrase")))
        return Patterns(out)
    raise ValueError(f"unknown setting kind {kind}")


def _not_too_many(entries: list[Any], where: str) -> None:
    if len(entries) > MAX_ENTRIES:
        raise RulesError(f"{where}: more than {MAX_ENTRIES:,} entries")


def _compile(value: Any, name: str, section: str, key: str, ignore_case: bool) -> Regex:
    if not isinstance(value, str):
        raise RulesError(f"{name}: [{section}] {key}: {value!r} is not a string")
    try:
        return Regex(value, ignore_case)
    except PatternError as exc:
        shown = value if len(value) <= 80 else value[:80] + "…"
        raise RulesError(
            f"{name}: [{section}] {key}: bad regex {shown!r} ({exc}; patterns run on RE2, "
            "which has no look-around or backreference)"
        ) from None


# -- inputs ---------------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+", re.I)


# The last text `words` counted, and its count: two rules count the words of every reply.
_counted: tuple[str, int] = ("", 0)


def words(text: str) -> int:
    global _counted
    last = _counted  # one read: another thread may count meanwhile
    if last[0] is text:
        return last[1]
    n = len(text.split())
    _counted = (text, n)
    return n


def source_from_result(result: Any) -> Source:
    """A tool result as a source: the result and every URL in it."""
    found = _URL.findall(result) if isinstance(result, str) else _urls_in_json(result)
    if not found:
        return Source(result, ())
    return Source(result, tuple(dict.fromkeys(u.rstrip(".,;") for u in found)))


def _urls_in_json(value: Any) -> list[str]:
    """Every URL in a JSON value's strings (keys too), in order.

    Searched in the value's JSON text, one pass in C, when that text has no escape: then
    each string is written as it is between quotes, and a URL stops at a quote, so what is
    found is what a search of each string finds. A text with escapes (a newline inside a
    string is `\\n` there, which a URL would run on through) is searched string by
    string."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:  # integers beyond 64 bits: string by string
        text = None
    if text is not None and "://" not in text:
        return []
    if text is not None and "\\" not in text:
        return _URL.findall(text)
    return [u for s in _strings(value) if "://" in s for u in _URL.findall(s)]


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


def result(
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
