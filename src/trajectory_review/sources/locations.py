"""Which kind of source a location names, told from its text alone.

The registry (sources/__init__.py) asks these before it imports a kind's module: every
command names its sources before `serve` and `lint` start their index build, and the
ClickHouse and Connect modules (their clients, dataclasses, logging, hashing) delayed
that build on plain files too (docs/performance-log.md, "Eleventh session of #50").
"""

from __future__ import annotations

CLICKHOUSE_SCHEMES = ("clickhouse://", "chdb://")
CONNECT_PREFIX = "connect:"


def is_clickhouse(location: object) -> bool:
    return isinstance(location, str) and location.lower().startswith(CLICKHOUSE_SCHEMES)


def is_connect(location: object) -> bool:
    return isinstance(location, str) and location.startswith(CONNECT_PREFIX)
