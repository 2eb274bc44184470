"""What one immutable record costs to make, by the kind of class it is: the choice behind
the model's records (docs/architecture.md, "Immutable records, built at C speed").

    .venv/bin/python scripts/record_types.py

Times making a record shaped like a message part (a type, a text, five fields left to
their defaults, the raw value) a million times, as a frozen dataclass (what the records
were), the same with slots, a frozen msgspec Struct with and without the cycle collector,
a NamedTuple and a plain tuple. Prints nanoseconds per record, best of five.
"""

from __future__ import annotations

import timeit
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgspec


@dataclass(frozen=True)
class FrozenDataclass:
    type: str
    sig: tuple[Any, ...]
    content: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    response: Any = None
    raw: Any = None


@dataclass(frozen=True, slots=True)
class FrozenSlotsDataclass:
    type: str
    sig: tuple[Any, ...]
    content: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    response: Any = None
    raw: Any = None


class FrozenStruct(msgspec.Struct, frozen=True):
    type: str
    sig: tuple[Any, ...]
    content: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    response: Any = None
    raw: Any = None


class FrozenStructNoGC(msgspec.Struct, frozen=True, gc=False):
    type: str
    sig: tuple[Any, ...]
    content: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    response: Any = None
    raw: Any = None


class Named(NamedTuple):
    type: str
    sig: tuple[Any, ...]
    content: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    response: Any = None
    raw: Any = None


def main() -> None:
    raw = {"type": "text", "content": "Forty plots."}
    sig = ("text", "Forty plots.")
    n = 1_000_000
    kinds: list[tuple[str, Any]] = [
        ("frozen dataclass", FrozenDataclass),
        ("frozen dataclass, slots", FrozenSlotsDataclass),
        ("msgspec Struct, frozen", FrozenStruct),
        ("msgspec Struct, frozen, gc=False", FrozenStructNoGC),
        ("NamedTuple", Named),
    ]
    print("| record | ns each |\n|---|---|")
    for label, cls in kinds:
        best = min(
            timeit.repeat(
                lambda cls=cls: cls("text", sig, content="Forty plots.", raw=raw),
                number=n,
                repeat=5,
            )
        )
        print(f"| {label} | {best / n * 1e9:.0f} |")
    best = min(
        timeit.repeat(
            lambda: ("text", sig, "Forty plots.", None, None, None, None, raw), number=n, repeat=5
        )
    )
    print(f"| plain tuple | {best / n * 1e9:.0f} |")


if __name__ == "__main__":
    main()
