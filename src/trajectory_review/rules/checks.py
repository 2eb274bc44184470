"""The six reply rules (docs/spec.md §6), each registered with its settings.

The order here is the report order. Three states per result: `applicable` (could the rule
be evaluated at all), `passed` (the metric) and `blocks_publish` (the gate).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from types import SimpleNamespace

from trajectory_review.rules.patterns import MAX_ENTRIES
from trajectory_review.rules.registry import (
    _URL,
    RULES,
    Key,
    RuleResult,
    Source,
    result,
    rule,
    words,
)


@rule("says-something", min_words=Key(8, "int"))
def says_something(reply: str, sources: Sequence[Source], k: SimpleNamespace) -> RuleResult:
    n = words(reply)
    if n >= k.min_words:  # most replies: no detail to write
        return PASSED["says-something"]
    return result(
        "says-something", False, f"only {n} word{'s' if n != 1 else ''} (at least {k.min_words})"
    )


_BACKTICK = re.compile(r"`([^`\n]+)`")


def identifier_candidates(reply: str, k: SimpleNamespace) -> list[str]:
    """Backticked names in the reply shaped like the product's API (URLs blanked out)."""
    if "`" not in reply:
        return []
    text = reply
    if "://" in text:  # a name in a link is no name
        text = _URL.sub(lambda m: " " * len(m.group(0)), text)
    out: list[str] = []
    for token in _BACKTICK.findall(text):
        token = _bare_name(token)
        if not token:
            continue
        for seg in token.split("."):
            seg = seg.strip()
            if not seg or k.exclude.matches(seg):
                continue
            if k.shapes.matches(seg) and seg not in out:
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


@rule(
    "grounded-identifiers",
    shapes=Key([], "regexes"),
    exclude=Key([], "regexes"),
    block_at=Key(2, "int"),
)
def grounded_identifiers(reply: str, sources: Sequence[Source], k: SimpleNamespace) -> RuleResult:
    name = "grounded-identifiers"
    if not k.shapes:
        return result(name, True, "no identifier shapes configured", applicable=False)
    candidates = identifier_candidates(reply, k)
    # the sources' text only when there is a name to look for (most answers have none)
    haystack = [(s.text + " " + " ".join(s.urls)).lower() for s in sources] if candidates else []
    unsourced = [c for c in candidates if not any(c.lower() in h for h in haystack)]
    n = len(unsourced)
    if not n:  # most answers: no detail to write
        return PASSED[name] if k.block_at > 0 else result(name, True, blocks=True)
    detail = (
        "unsourced identifier"
        + ("s" if n != 1 else "")
        + ": "
        + ", ".join(f"`{u}`" for u in unsourced)
    )
    if 0 < n < k.block_at:
        detail += f" (below the suppression threshold of {k.block_at})"
    return result(name, n == 0, detail, blocks=n >= k.block_at, evidence=unsourced)


_AUTHORITY = re.compile(r"(https?://)([^/\s?#]+)", re.I)
_BOUNDARY = set(")]}.,;\"'<>#?")


def _lower_authority(url: str) -> str:
    if "://" not in url:  # nothing the pattern can find: most replies
        return url
    return _AUTHORITY.sub(lambda m: m.group(1).lower() + m.group(2).lower(), url)


def _needle(url: str) -> str:
    """A retrieved URL as a reply citing it would read once its authority is lower-cased:
    worked out once per URL, not once per answer that might cite it. Only a URL of
    ordinary length is remembered: a tool result can carry URLs of any length, and the
    memory of them must stay small."""
    if len(url) > MAX_KEPT_URL:
        return _lower_authority(url).rstrip("/#?")
    return _kept_needle(url)


MAX_KEPT_URL = 2048


@lru_cache(maxsize=4096)
def _kept_needle(url: str) -> str:
    return _lower_authority(url).rstrip("/#?")


def cites(reply: str, url: str) -> bool:
    """Does the reply cite this retrieved URL, ending at a boundary (not a longer path)?"""
    return _cited_in(_lower_authority(reply), url)


def _cited_in(hay: str, url: str) -> bool:
    """`cites` on a reply whose authorities are already lower-cased (done once per reply,
    not once per retrieved URL: a tool result can carry thousands of URLs)."""
    needle = _needle(url)
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


@rule("cites-or-is-a-short-handoff", handoff_word_cap=Key(60, "int"))
def cites_or_is_a_short_handoff(
    reply: str, sources: Sequence[Source], k: SimpleNamespace
) -> RuleResult:
    name = "cites-or-is-a-short-handoff"
    n = words(reply)
    short = n <= k.handoff_word_cap
    urls = [u for s in sources for u in s.urls]
    if sources and not urls and not short:
        return result(
            name, True, "retrieved sources carry no URL: nothing could be cited", applicable=False
        )
    if short:  # a short handoff passes whatever it cites
        return PASSED[name]
    hay = _lower_authority(reply)
    if any(_cited_in(hay, u) for u in urls):
        return PASSED[name]
    if not sources:
        detail = f"{n} words built on no retrieved source (handoff cap {k.handoff_word_cap})"
    else:
        detail = (
            f"{n} words and cites none of the {len(urls)} retrieved URL"
            f"{'s' if len(urls) != 1 else ''} (handoff cap {k.handoff_word_cap})"
        )
    shaped = [m.group(0) for m in _URL.finditer(reply)]
    return result(name, False, detail, evidence=shaped)


@rule("no-banned-phrases", pattern=Key([], "patterns"))
def no_banned_phrases(reply: str, sources: Sequence[Source], k: SimpleNamespace) -> RuleResult:
    patterns = k.pattern
    if getattr(patterns, "any", None) is not None and not patterns.any.found(reply):
        return PASSED["no-banned-phrases"]  # none matches anywhere
    hits = [(p.reason, m.group(0)) for p in patterns for m in p.regex.finditer(reply)]
    reasons = list(dict.fromkeys(r for r, _ in hits))
    return result("no-banned-phrases", not hits, "; ".join(reasons), evidence=[h for _, h in hits])


@rule("no-hedged-names", phrases=Key([], "strings"))
def no_hedged_names(reply: str, sources: Sequence[Source], k: SimpleNamespace) -> RuleResult:
    low = reply.lower()
    hits = [h for h in k.phrases if h.lower() in low]
    if not hits:
        return PASSED["no-hedged-names"]
    evidence = [m.group(0) for h in hits for m in re.finditer(re.escape(h), reply, re.I)]
    return result(
        "no-hedged-names",
        not hits,
        "hedged API name: " + ", ".join(f'"{h}"' for h in hits),
        evidence=evidence,
    )


@lru_cache(maxsize=MAX_ENTRIES)
def _named(package: str) -> re.Pattern[str]:
    """A dead package's name as a pattern, made once, not escaped and looked up in `re`'s
    cache again for every answer."""
    return re.compile(re.escape(package), re.I)


def _names(package: str, reply: str) -> bool:
    """Does the reply name the package, in any case? On ASCII, where a case-blind match
    is a match of the lower-cased texts, without a pattern (most replies: a pattern
    ignoring case was a search of its own per answer)."""
    if reply.isascii() and package.isascii():
        return package.lower() in reply.lower()
    return _named(package).search(reply) is not None


@rule(
    "no-dead-package",
    dead=Key([], "strings"),
    live=Key([], "iregexes"),
    migration=Key([], "strings"),
)
def no_dead_package(reply: str, sources: Sequence[Source], k: SimpleNamespace) -> RuleResult:
    name = "no-dead-package"
    if not k.dead:
        return result(name, True, "no dead package configured", applicable=False)
    named = [d for d in k.dead if _names(d, reply)]
    if not named:
        return PASSED[name]
    live = k.live.matches(reply)
    framing = [m for m in k.migration if m.lower() in reply.lower()]
    if live and framing:
        return PASSED[name]
    why = "named without migration framing" if live else "named as if current"
    return result(name, False, f"dead package {', '.join(named)} {why}", evidence=named)


# A passing result is the same value for every answer that passes (RuleResult is
# immutable): each rule's is made once, not again for every answer of every replay.
PASSED = {name: result(name, True) for name in RULES}
