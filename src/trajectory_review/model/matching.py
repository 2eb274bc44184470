"""Building a conversation from its calls: the canonical history, its branches, and each
recorded decision attached to the exchange it structurally belongs to (see trajectory.py).

Long on purpose: the general matching and its shortcut for a conversation on one path
side by side, as they must give the same conversation (tests/model/test_matching_paths.py
holds them to one another)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter
from typing import Any

from trajectory_review.index.rows import ChatRow, TurnRow
from trajectory_review.model.history import MessageCache
from trajectory_review.model.messages import KEY, SIG, Message
from trajectory_review.model.spans import read_call, read_record
from trajectory_review.model.trajectory import (
    ORDER,
    ChatCall,
    Conversation,
    Exchange,
    Record,
    Signature,
    Warning,
    exchange_signature,
    split_exchanges,
)
from trajectory_review.support.errors import one_line


def build_conversation(
    conversation_id: str,
    rows: Sequence[ChatRow],
    turns: Sequence[TurnRow],
    warnings: list[Warning] | None = None,
) -> Conversation | None:
    """The conversation as the reviewer sees it, or None when it has no exchange.

    `warnings` collects what was found wrong; when None is returned it says why (the
    warning must not be thrown away with the conversation)."""
    warnings = warnings if warnings is not None else []
    # each message parsed about once, however many calls repeat it; a single call repeats
    # nothing, and keying its messages by their JSON was a fifth of its build
    cache = MessageCache() if len(rows) > 1 else None
    if cache is not None:
        for r in sorted(rows, key=_STARTED):
            # in the order they were made: see MessageCache
            cache.remember(r.input_messages, r.output_messages)
    calls = [c for r in rows if (c := read_call(r, warnings, cache)) is not None]
    if not calls:
        return None
    turn_by_key = {(t.trace_id, t.span_id): t for t in turns}
    latest = max(calls, key=ORDER)
    if _is_linear(calls, latest):
        return _by_positions(conversation_id, calls, latest, (), turn_by_key, warnings, linear=True)
    branch_paths = _branches(latest.history, calls)
    if 1 + len(branch_paths) <= POSITIONS_PATHS:
        return _by_positions(conversation_id, calls, latest, branch_paths, turn_by_key, warnings)
    split = _Split()
    records = _Prefixes()
    for sigs, keys, record in _recorded_calls(calls, turn_by_key, conversation_id, warnings, split):
        records.add(sigs, keys, record)
    on_path = _Prefixes()
    for call in calls:
        on_path.add(call.signatures(), _keys(call.history), call)
    main = _assemble(
        conversation_id, latest.history, on_path, records, split, warnings, latest.end_ns
    )
    if main is None:
        return None
    branches = []
    for n, (history, end_ns) in enumerate(branch_paths, start=1):
        branch = _assemble(
            f"{conversation_id}~{n}",
            history,
            on_path,
            records,
            split,
            [],
            end_ns,
            branch_of=conversation_id,
        )
        if branch is not None:
            branches.append(branch)
    return Conversation(
        id=main.id,
        last_active_ns=main.last_active_ns,
        exchanges=main.exchanges,
        branches=tuple(branches),
        warnings=tuple(_dedupe(warnings)),
        system=latest.system,
        calls=tuple(calls),
    )


def conversation_from_rows(
    conversation_id: str, rows: Sequence[ChatRow], dropped: list[Warning] | None = None
) -> Conversation | None:
    """A conversation from its index rows, or None when there is nothing to show.

    One conversation's bad data never stops the others: whatever goes wrong building it
    (a value nested past every parser's limit, a number no clock can show, a shape no
    one expected) drops this conversation only, and `dropped` gets a warning naming it
    and why, as it does when its messages cannot be read at all.
    """
    if not rows:
        return None
    warnings: list[Warning] = []
    try:
        rows = list({(r.trace_id, r.span_id): r for r in rows}.values())  # one copy each
        turns = {(r.turn.trace_id, r.turn.span_id): r.turn for r in rows if r.turn}
        conv = build_conversation(conversation_id, rows, list(turns.values()), warnings)
    except (RecursionError, MemoryError) as exc:
        conv = None
        warnings.append(Warning(conversation_id, f"dropped: too deeply nested to read ({exc})"))
    except Exception as exc:
        conv = None
        why = one_line(exc)
        warnings.append(Warning(conversation_id, f"dropped: could not be read ({why})"))
    if conv is None and dropped is not None:
        dropped.extend(warnings)
    return conv


# Paths (the canonical one and the branches) up to which an edited conversation is
# matched by positions, path by path: that compares every call with every path (in C),
# where the hashed prefixes hash every call's history once (in Python), whatever the
# paths. Past it, a conversation recorded as thousands of calls, each its own branch,
# would be compared thousands of times over (docs/performance-log.md, "Sixth session of
# #50").
POSITIONS_PATHS = 16
_STARTED = attrgetter("start_ns", "end_ns")  # rows in the order their calls were made


def _is_linear(calls: Sequence[ChatCall], latest: ChatCall) -> bool:
    """Is every call's history a prefix of the latest one's, by the signatures matching
    compares (no edit, no branch: most conversations)?"""
    canon = latest.signatures()
    return all(canon[: len(s)] == s for c in calls if (s := c.signatures()) is not canon)


def _by_positions(
    conversation_id: str,
    calls: Sequence[ChatCall],
    latest: ChatCall,
    branch_paths: Sequence[tuple[tuple[Message, ...], int]],
    turn_by_key: dict[tuple[str, str], TurnRow],
    warnings: list[Warning],
    linear: bool = False,
) -> Conversation | None:
    """build_conversation worked out by positions in each path's history (the canonical
    one, then each branch's: `branch_paths`, as _branches finds them) instead of by
    hashing every call's history and every prefix of it, which was the greater part of a
    conversation's build (docs/performance-log.md, "matching on one path" and "Sixth
    session of #50"). `linear`: every call lies on the latest one's history (_is_linear),
    so none is compared with it again."""
    recorded = _recorded(calls, turn_by_key, conversation_id, warnings)
    main = _path_exchanges(
        conversation_id, latest.history, latest.signatures(), calls, recorded, warnings, linear
    )
    if main is None:
        return None
    branches = []
    for n, (history, end_ns) in enumerate(branch_paths, start=1):
        branch_id = f"{conversation_id}~{n}"
        said: list[Warning] = []  # a branch's own (its conflicts), as _assemble keeps them
        exchanges = _path_exchanges(
            branch_id, history, tuple(map(SIG, history)), calls, recorded, said
        )
        if exchanges is not None:
            branches.append(
                Conversation(
                    branch_id, end_ns, exchanges, warnings=tuple(said), branch_of=conversation_id
                )
            )
    return Conversation(
        id=conversation_id,
        last_active_ns=latest.end_ns,
        exchanges=main,
        branches=tuple(branches),
        warnings=tuple(_dedupe(warnings)),
        system=latest.system,
        calls=tuple(calls),
    )


def _path_exchanges(
    conversation_id: str,
    history: tuple[Message, ...],
    sigs: tuple[Signature, ...],
    calls: Sequence[ChatCall],
    recorded: Sequence[tuple[ChatCall, int, Record]],
    warnings: list[Warning],
    all_on: bool = False,
) -> tuple[Exchange, ...] | None:
    """One path's exchanges (None: it has none), as _assemble makes them.

    A call lies on the path when its history is a prefix of the path's (`all_on`: every
    call does), and then ends in the last exchange its messages begin. A record claims
    exchange k when its call, from its first question on, is the path's first k
    exchanges exactly (the same exchange signatures up to k, as _assemble asks: the
    messages before the first question belong to no exchange)."""
    # plain[n]: exchanges begun in the first n messages; ends[k]: where exchange k ends
    plain = [0] * (len(history) + 1)
    starts: list[int] = []
    for n, msg in enumerate(history):
        if msg.is_plain_user:
            starts.append(n)
        plain[n + 1] = len(starts)
    if not starts:
        return None
    ends = [0, *starts[1:], len(history)]  # ends[k], exchange k 1-based
    parts = [history[a:b] for a, b in zip(starts, ends[1:], strict=True)]
    first = starts[0]
    # the exchange that ends where a recorded call's messages (from its first question
    # on) end, by their number
    ending = {ends[k] - first: k for k in range(1, len(ends))}
    claimed = []
    for call, call_first, record in recorded:
        length = len(call.history) - call_first
        k = ending.get(length)
        if k is not None and (
            all_on or call.signatures()[call_first:] == sigs[first : first + length]
        ):
            claimed.append((k, record))
    on = calls if all_on else [c for c in calls if (cs := c.signatures()) == sigs[: len(cs)]]
    # in the order _assemble meets them (shortest history first): ties of time stay so
    ended = ((plain[len(c.history)], c) for c in sorted(on, key=lambda c: len(c.history)))
    return _exchanges(conversation_id, parts, claimed, ended, warnings)


def _recorded(
    calls: Sequence[ChatCall],
    turn_by_key: dict[tuple[str, str], TurnRow],
    conversation_id: str,
    warnings: list[Warning],
) -> list[tuple[ChatCall, int, Record]]:
    """Per turn span, its latest chat call (the last round of its tool loop) when it ends
    its last exchange complete, with where its first question is, and its record: read
    once, in the calls' order (their warnings too), for either matching."""
    out = []
    for call in _latest_per_turn(calls):
        turn = turn_by_key.get((call.trace_id, call.turn_span_id or ""))
        if turn is None:
            continue
        history = call.history
        first = next((n for n, m in enumerate(history) if m.is_plain_user), None)
        last = history[-1]
        # its last exchange complete (an assistant reply, no tool call after the question)
        if first is None or last.role != "assistant" or last.has_tool_calls:
            continue
        out.append((call, first, read_record(turn, conversation_id, warnings)))
    return out


def _latest_per_turn(calls: Sequence[ChatCall]) -> list[ChatCall]:
    """Per turn span, its latest chat call (the last round of its tool loop), in the
    order they were made."""
    by_turn: dict[tuple[str, str], ChatCall] = {}
    for call in calls:
        if call.turn_span_id is None:
            continue
        key = (call.trace_id, call.turn_span_id)
        if key not in by_turn or call.order > by_turn[key].order:
            by_turn[key] = call
    return sorted(by_turn.values(), key=ORDER)


def _recorded_calls(
    calls: Sequence[ChatCall],
    turn_by_key: dict[tuple[str, str], TurnRow],
    conversation_id: str,
    warnings: list[Warning],
    split: _Split,
) -> list[tuple[list[Signature], list[int], Record]]:
    """_recorded for the hashed prefixes: each record with its call's exchange
    signatures and their hashes."""
    out = []
    for call, _first, record in _recorded(calls, turn_by_key, conversation_id, warnings):
        _, sigs, keys = split(call.history)
        out.append((sigs, keys, record))
    return out


Split = tuple[list[tuple[Message, ...]], list[Signature], list[int]]


class _Split:
    """A history's exchanges, their signatures and their hashes, each worked out once per
    build: the latest call's history is both the canonical one and a recorded call's."""

    def __init__(self) -> None:
        self._done: dict[int, tuple[tuple[Message, ...], Split]] = {}

    def __call__(self, history: tuple[Message, ...]) -> Split:
        hit = self._done.get(id(history))
        if hit is None or hit[0] is not history:
            parts = split_exchanges(history)
            sigs = [exchange_signature(e) for e in parts]
            hit = (history, (parts, sigs, [hash(_keys(e)) for e in parts]))
            self._done[id(history)] = hit
        return hit[1]


def _keys(messages: Sequence[Message]) -> tuple[int, ...]:
    """The messages' signature hashes (taken once, when each was read)."""
    return tuple(map(KEY, messages))


_MOD = (1 << 61) - 1  # a Mersenne prime: prefix hashes stay exact-width integers
_BASE = 1_000_003


def _rolling(keys: Sequence[int]) -> Iterator[int]:
    """The hash of every prefix of a path, shortest first, in one pass, from the hashes
    of its elements (`keys`)."""
    h = 0
    for k in keys:
        h = (h * _BASE + k) % _MOD
        yield h


def _hash_of(keys: Sequence[int]) -> int:
    h = 0
    for k in keys:
        h = (h * _BASE + k) % _MOD
    return h


class _Prefixes:
    """Sequences of signatures with what ends at each: a history finds every stored
    sequence that is a prefix of it in one pass, by a hash of each of its prefixes (each
    hit checked by comparing the sequences, so a collision never matches). Comparing each
    history with each recorded call instead was quadratic: a conversation of 20,000 turns
    recorded as 20,000 short calls (each its own branch) took four and a half minutes;
    a tree of its signatures made an object per message, a fifth of a 20,000-answer
    conversation's build."""

    def __init__(self) -> None:
        self._ends: dict[tuple[int, int], list[tuple[tuple[Signature, ...], object]]] = {}

    def add(self, path: Sequence[Signature], keys: Sequence[int], item: object) -> None:
        """`keys`: the hash of each element of `path` (kept on the messages, so a prefix's
        hash never walks a signature's nested tuples again)."""
        key = tuple(path)
        self._ends.setdefault((len(key), _hash_of(keys)), []).append((key, item))

    def prefixes(
        self, path: Sequence[Signature], keys: Sequence[int]
    ) -> Iterator[tuple[int, list[Any]]]:
        """(length, items) for every stored sequence that is a prefix of `path`."""
        ends = self._ends
        whole = tuple(path)
        for depth, h in enumerate(_rolling(keys), start=1):
            stored = ends.get((depth, h))
            if stored:
                head = whole[:depth]
                items = [item for key, item in stored if key == head]
                if items:
                    yield depth, items


def _assemble(
    conversation_id: str,
    history: tuple[Message, ...],
    on_path: _Prefixes,  # every call, by its history's message signatures
    records: _Prefixes,  # every recorded call's Record, by its exchange signatures
    split: _Split,
    warnings: list[Warning],
    last_active_ns: int,
    branch_of: str | None = None,
) -> Conversation | None:
    parts, sigs, keys = split(history)
    if not parts:
        return None
    claimed = ((k, r) for k, found in records.prefixes(sigs, keys) for r in found)
    on_it = on_path.prefixes(tuple(map(SIG, history)), _keys(history))
    ended = ((c.exchange_count(), c) for _, found in on_it for c in found)
    exchanges = _exchanges(conversation_id, parts, claimed, ended, warnings)
    return Conversation(
        conversation_id,
        last_active_ns,
        exchanges,
        warnings=tuple(warnings) if branch_of else (),
        branch_of=branch_of,
    )


def _exchanges(
    conversation_id: str,
    parts: Sequence[tuple[Message, ...]],
    claimed: Iterable[tuple[int, Record]],
    ended: Iterable[tuple[int, ChatCall]],
    warnings: list[Warning],
) -> tuple[Exchange, ...]:
    """The exchanges, each with the one record that claims it (`claimed`: the exchange
    and the record, in the order read; none when records disagree, and a warning says
    which) and the calls that ended in it (`ended`: the exchange and the call, 0 for
    none)."""
    claims: dict[int, list[Record]] = defaultdict(list)
    for k, record in claimed:
        claims[k].append(record)
    calls_at: dict[int, list[ChatCall]] = defaultdict(list)
    for k, call in ended:
        if k:
            calls_at[k].append(call)
    conflicts = []
    exchanges = []
    for i, msgs in enumerate(parts, start=1):
        chosen: Record | None = None
        conflict = False
        records = claims.get(i, [])
        # records compared by what they say only when there are several: a lone record's
        # decisions were written out as canonical JSON for nothing
        distinct = list({r.key(): r for r in records}.values()) if len(records) > 1 else records
        if len(distinct) == 1:
            chosen = distinct[0]
        elif distinct:
            conflict = True
            conflicts.append(i)
        exchanges.append(
            Exchange(i, msgs, chosen, conflict, tuple(sorted(calls_at.get(i, ()), key=ORDER)))
        )
    if conflicts:
        warnings.append(_conflict(conversation_id, conflicts))
    return tuple(exchanges)


def _conflict(conversation_id: str, conflicts: Sequence[int]) -> Warning:
    which = ", ".join(str(i) for i in conflicts)
    noun = "exchange" if len(conflicts) == 1 else "exchanges"
    return Warning(conversation_id, f"conflicting audit records ({noun} {which}); showing no claim")


def _branches(
    canonical: tuple[Message, ...], calls: Sequence[ChatCall]
) -> list[tuple[tuple[Message, ...], int]]:
    """Distinct maximal histories that are not a prefix of the canonical one."""
    canon = tuple(map(SIG, canonical))
    abandoned: dict[tuple[Signature, ...], tuple[tuple[Message, ...], int]] = {}
    for call in calls:
        sig = call.signatures()
        if sig == canon[: len(sig)]:
            continue  # an earlier round on the canonical path, not a branch
        prev = abandoned.get(sig)
        end = max(call.end_ns, prev[1]) if prev else call.end_ns
        abandoned[sig] = (call.history, end)
    # a history is maximal when no longer abandoned history runs on through it
    through: dict[tuple[int, int], tuple[Signature, ...]] = {}  # prefix -> a longer key
    paths = _Prefixes()
    for key, (history, end) in abandoned.items():
        keys = _keys(history)
        paths.add(key, keys, end)
        for depth, h in enumerate(_rolling(keys[:-1]), start=1):
            through.setdefault((depth, h), key)
    result = []
    for key, (history, _end) in abandoned.items():
        keys = _keys(history)
        longer = through.get((len(key), _hash_of(keys)))
        if longer is not None and (
            longer[: len(key)] == key
            or any(len(o) > len(key) and o[: len(key)] == key for o in abandoned)
        ):  # (the scan runs only when two prefixes share a hash: never in practice)
            continue
        # a branch is as recent as the latest call on its path
        end = max(e for _, ends in paths.prefixes(key, keys) for e in ends)
        result.append((history, end))
    return sorted(result, key=lambda r: r[1])


def _dedupe(warnings: Sequence[Warning]) -> list[Warning]:
    seen = set()
    out = []
    for w in warnings:
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out
