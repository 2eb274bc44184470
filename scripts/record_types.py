"""What one immutable record costs to make, by the kind of class it is: the choice behind
the model's records (docs/architecture.md, "Immutable records, built at C speed").

    .venv/bin/python scripts/record_types.py

Times making a record shaped like a message part (a type, a signature, a text, four
fields left to their defaults, the raw value) a million times, as a frozen dataclass
(what the records were), the same with slots, a frozen msgspec Struct with and without
the cycle collector, a named tuple and a plain tuple. Prints nanoseconds per record,
best of five.
"""

from __future__ import annotations

import dataclasses
import timeit
from collections import namedtuple
from typing import Any

import msgspec

# the fields of a message part (model/messages.Part), the first two without a default
FIELDS = ("type", "sig", "content", "id", "name", "arguments", "response", "raw")
DEFAULTS = (None,) * (len(FIELDS) - 2)


def _dataclass(slots: bool) -> Any:
    fields = [(f, Any) if i < 2 else (f, Any, None) for i, f in enumerate(FIELDS)]
    return dataclasses.make_dataclass("Part", fields, frozen=True, slots=slots)


def _struct(gc: bool) -> Any:
    fields = [(f, Any) if i < 2 else (f, Any, None) for i, f in enumerate(FIELDS)]
    return msgspec.defstruct("Part", fields, frozen=True, gc=gc)


KINDS: list[tuple[str, Any]] = [
    ("frozen dataclass", _dataclass(slots=False)),
    ("frozen dataclass, slots", _dataclass(slots=True)),
    ("msgspec Struct, frozen", _struct(gc=True)),
    ("msgspec Struct, frozen, gc=False", _struct(gc=False)),
    ("named tuple", namedtuple("Part", FIELDS, defaults=DEFAULTS)),
]


def main() -> None:
    raw = {"type": "text", "content": "Forty plots."}
    sig = ("text", "Forty plots.")
    n = 1_000_000

    def best(make: Any) -> float:
        return min(timeit.repeat(make, number=n, repeat=5)) / n * 1e9

    print("| record | ns each |\n|---|---|")
    for label, cls in KINDS:
        ns = best(lambda cls=cls: cls("text", sig, content="Forty plots.", raw=raw))
        print(f"| {label} | {ns:.0f} |")
    ns = best(lambda: ("text", sig, "Forty plots.", None, None, None, None, raw))
    print(f"| plain tuple | {ns:.0f} |")


if __name__ == "__main__":
    main()
