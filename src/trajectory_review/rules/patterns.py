"""A profile's regular expressions, run by RE2.

Profiles are written by people (a deployment's file, a reviewer pasting a candidate into
the What if tab) and run over text a model wrote. Python's `re` backtracks: a pattern as
plain as `(\\w+\\s?)*$` took longer than anyone waited on one ordinary answer, and `re`
holds the GIL for the whole match, so one pasted pattern froze the server for every
reviewer. RE2 runs every pattern in time linear in the text and refuses, when the
profile is read, what it cannot run that way (look-arounds, backreferences): a profile
says so in one line instead of stalling later.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from trajectory_review.support.errors import Said

# Memory one compiled pattern may use (RE2's own bound; it refuses a larger program with
# "pattern too large"): a pasted profile of many patterns stays small.
MAX_MEM = 2 << 20
# Entries of one list setting: each pattern is searched once per answer.
MAX_ENTRIES = 1_000
# Matches of one pattern kept as evidence of one answer. Each search after a match starts
# again where the last one ended, so this also bounds the work on text full of matches.
MAX_MATCHES = 20


class PatternError(Said, ValueError):
    """RE2 cannot run this pattern (its syntax, or a feature it has no linear-time way to
    run); the message is RE2's own, one line."""


class Regex:
    """One compiled pattern: `search` and `finditer` as `re` has them, compared, hashed
    and pickled by its text (worker processes compile it again)."""

    __slots__ = ("pattern", "ignore_case", "_compiled")

    def __init__(self, pattern: str, ignore_case: bool = False) -> None:
        options = re2.Options()
        options.case_sensitive = not ignore_case
        options.max_mem = MAX_MEM
        options.log_errors = False
        try:
            self._compiled = re2.compile(pattern, options)
        except re2.error as exc:
            why = exc.args[0] if exc.args else "invalid"
            if isinstance(why, bytes):  # RE2's message, as its binding passes it on
                why = why.decode("utf-8", "replace")
            raise PatternError(str(why).splitlines()[0] if str(why) else "invalid") from None
        self.pattern = pattern
        self.ignore_case = ignore_case

    def search(self, text: str) -> Any:
        return self._compiled.search(text)

    def found(self, text: str) -> bool:
        """Does it match anywhere in `text`: `search` without the match. Searched in the
        text's UTF-8: given a str, the binding encodes it and then maps every offset of
        the match back to characters, which a yes or no never reads."""
        return self._compiled.search(text.encode()) is not None

    def finditer(self, text: str) -> Iterator[Any]:
        for n, m in enumerate(self._compiled.finditer(text)):
            if n >= MAX_MATCHES:
                return
            yield m

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Regex) and (self.pattern, self.ignore_case) == (
            other.pattern,
            other.ignore_case,
        )

    def __hash__(self) -> int:
        return hash((self.pattern, self.ignore_case))

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r}{', ignore_case=True' if self.ignore_case else ''})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Regex, (self.pattern, self.ignore_case))


@dataclass(frozen=True)
class Pattern:
    regex: Regex
    reason: str


class Patterns:
    """A profile's banned-phrase patterns, with `any`: all of them as one alternation.

    Most answers match no pattern: one search of the alternation says so in one pass over
    the reply instead of one pass per pattern (the banned-phrase rule was a quarter of
    the catalog's build time). Only an answer it finds something in is searched pattern by
    pattern, so the evidence is exactly what each pattern finds on its own."""

    # Iterated, counted, compared and pickled as the tuple it holds; the alternation is
    # rebuilt on unpickling rather than shipped to worker processes.
    def __init__(self, patterns: Sequence[Pattern]) -> None:
        self.items: tuple[Pattern, ...] = tuple(patterns)
        self.any: Regex | None = _alternation([p.regex for p in self.items])

    def __iter__(self) -> Iterator[Pattern]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Patterns) and self.items == other.items

    def __hash__(self) -> int:
        return hash(self.items)

    def __repr__(self) -> str:
        return f"Patterns({self.items!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # rebuilt in worker processes
        return (Patterns, (self.items,))


class Regexes(tuple[Regex, ...]):
    """A list setting of patterns (an identifier's shapes, its exclusions): a tuple of
    Regex, with `matches(text)`: does any of them find something in `text`.

    The identifier rule asks it of every backticked name of every answer, and names
    repeat across answers: one search of the alternation answers it, and the answer is
    kept for the next time that name comes (the rule was the costliest of the six, one
    search per pattern per name)."""

    _known: dict[str, bool]
    _any: Regex | None

    def matches(self, text: str) -> bool:
        known = self.__dict__.get("_known")
        if known is None:  # first use (also after unpickling in a worker)
            known = self._known = {}
            self._any = _alternation(self)
        hit = known.get(text)
        if hit is None:
            joined = self._any
            if joined is not None:
                hit = joined.found(text)
            else:
                hit = any(r.found(text) for r in self)
            if len(text) <= MAX_KNOWN_TEXT:  # a name, not a whole reply
                if len(known) >= MAX_KNOWN:
                    known.clear()  # model text is unbounded: the memory of it is not
                known[text] = hit
        return hit

    def __reduce__(self) -> tuple[Any, ...]:  # the memory stays behind
        return (Regexes, (tuple(self),))


# Names one Regexes remembers before it starts again, and the longest it remembers.
MAX_KNOWN = 4096
MAX_KNOWN_TEXT = 256


def _alternation(regexes: Sequence[Regex]) -> Regex | None:
    """One pattern for all, or None (none given, mixed case settings, or a joined
    program over RE2's memory bound: each is then searched on its own)."""
    if not regexes or len({r.ignore_case for r in regexes}) != 1:
        return None
    try:
        return Regex("|".join(f"(?:{r.pattern})" for r in regexes), regexes[0].ignore_case)
    except PatternError:
        return None
