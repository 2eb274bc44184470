"""Spans as the OpenTelemetry Collector's ClickHouse exporter stores them, both ways.

`COLLECTOR_DDL` is the exporter's `otel_traces` table, its trace-id/time lookup table and
the materialized view that fills it (contrib exporter/clickhouseexporter, sqltemplates;
MergeTree, no TTL, no cluster, no full-text indexes): `load` creates the same table a
Collector would, so what is tested here is what a team's store looks like.

The exporter flattens every attribute value to a string (pcommon's `AsString`: ints in
decimal, booleans `true`/`false`, arrays and maps as JSON) and the status and kind to
names. `span_row` does the same for `load`; `any_value` and `status_fields` read a
stored row back the way the file index reads OTLP/JSON (index/resolve.py), restoring
what the app reads as non-strings.
"""

from __future__ import annotations

import json
from typing import Any

from trajectory_review.sources.conventions import MARK_EVENTS, MARK_KEYS, SESSION_KEYS

TRACES_TABLE = """
CREATE TABLE IF NOT EXISTS {db}.{table} (
    Timestamp DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ParentSpanId String CODEC(ZSTD(1)),
    TraceState String CODEC(ZSTD(1)),
    SpanName LowCardinality(String) CODEC(ZSTD(1)),
    SpanKind LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion String CODEC(ZSTD(1)),
    SpanAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    Duration UInt64 CODEC(T64, ZSTD(1)),
    StatusCode LowCardinality(String) CODEC(ZSTD(1)),
    StatusMessage String CODEC(ZSTD(1)),
    Events Nested (
        Timestamp DateTime64(9),
        Name LowCardinality(String),
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    Links Nested (
        TraceId String,
        SpanId String,
        TraceState String,
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    ResourceAttributeItems Array(String) ALIAS arrayMap(kv -> concat(kv.1, '=', kv.2),
        CAST(ResourceAttributes, 'Array(Tuple(String, String))')),
    SpanAttributeItems Array(String) ALIAS arrayMap(kv -> concat(kv.1, '=', kv.2),
        CAST(SpanAttributes, 'Array(Tuple(String, String))')),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_res_attr_key mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_res_attr_value mapValues(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_key mapKeys(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_value mapValues(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_duration Duration TYPE minmax GRANULARITY 1,
    INDEX idx_lower_span_name lower(SpanName) TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 8
) ENGINE = MergeTree()
PARTITION BY toDate(Timestamp)
PRIMARY KEY (ServiceName, SpanName, toDateTime(Timestamp))
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp), Timestamp)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1
"""

TRACE_ID_TS_TABLE = """
CREATE TABLE IF NOT EXISTS {db}.{table}_trace_id_ts (
    TraceId String CODEC(ZSTD(1)),
    Start SimpleAggregateFunction(min, DateTime) CODEC(ZSTD(1)),
    End SimpleAggregateFunction(max, DateTime) CODEC(ZSTD(1))
) ENGINE = AggregatingMergeTree()
PARTITION BY toStartOfWeek(Start)
ORDER BY (TraceId)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1
"""

TRACE_ID_TS_VIEW = """
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.{table}_trace_id_ts_mv
TO {db}.{table}_trace_id_ts
AS SELECT
    TraceId,
    min(Timestamp) AS Start,
    max(Timestamp) AS End
FROM {db}.{table}
WHERE TraceId != ''
GROUP BY TraceId
"""

COLLECTOR_DDL = (TRACES_TABLE, TRACE_ID_TS_TABLE, TRACE_ID_TS_VIEW)

INSERT_COLUMNS = [
    "Timestamp", "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName", "SpanKind",
    "ServiceName", "ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes",
    "Duration", "StatusCode", "StatusMessage", "Events.Timestamp", "Events.Name",
    "Events.Attributes", "Links.TraceId", "Links.SpanId", "Links.TraceState",
    "Links.Attributes",
]  # fmt: skip

# pdata's enum names, as the exporter writes them (traceutil.StatusCodeStr / SpanKindStr)
STATUS_NAMES = {0: "Unset", 1: "Ok", 2: "Error"}
KIND_NAMES = {0: "Unspecified", 1: "Internal", 2: "Server", 3: "Client", 4: "Producer",
              5: "Consumer"}  # fmt: skip
_OTLP_STATUS = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_STATUS_CODES = {v: k for k, v in STATUS_NAMES.items()}
# Attributes GenAI semantic conventions define as string arrays: flattened to a JSON
# array by the exporter, restored here (read as one string, `["stop"]` would be a reason).
ARRAY_ATTRIBUTES = frozenset({"gen_ai.response.finish_reasons"})


# -- OTLP/JSON -> row (what the exporter writes) ---------------------------------------------


def as_string(value: Any) -> str:
    """An OTLP/JSON AnyValue as the exporter stores it (pcommon Value.AsString)."""
    if not isinstance(value, dict) or not value:
        return ""
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return "true" if value["boolValue"] else "false"
    if "intValue" in value:
        return str(int(value["intValue"]))
    if "doubleValue" in value:
        return json.dumps(float(value["doubleValue"]))
    if "bytesValue" in value:
        return str(value["bytesValue"])  # already base64 in OTLP/JSON
    return json.dumps(_plain(value), separators=(",", ":"), ensure_ascii=False)


def _plain(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "arrayValue" in value:
        return [_plain(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {kv.get("key", ""): _plain(kv.get("value")) for kv in
                (value["kvlistValue"] or {}).get("values", [])}  # fmt: skip
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    return None


def attribute_map(attributes: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for kv in attributes or []:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str) and kv["key"] not in out:
            out[kv["key"]] = as_string(kv.get("value"))
    return out


def ns_value(ns: int) -> int:
    """A DateTime64(9) value for clickhouse-connect's insert: integer ticks (nanoseconds)
    are written exactly; text is parsed into a Python datetime first and loses the last
    three digits (measured with clickhouse-connect 1.12 on chdb, pinned by a test)."""
    return int(ns)


def span_row(resource: dict[str, Any], scope: dict[str, Any], span: dict[str, Any]) -> list[Any]:
    """One OTLP/JSON span as a row of INSERT_COLUMNS."""
    start = int(span.get("startTimeUnixNano") or 0)
    end = int(span.get("endTimeUnixNano") or start)
    status = span.get("status") or {}
    code = status.get("code", 0)
    code = _OTLP_STATUS.get(code, code) if isinstance(code, str) else code
    res_attrs = attribute_map(resource.get("attributes"))
    events = span.get("events") or []
    links = span.get("links") or []
    return [
        ns_value(start),
        str(span.get("traceId") or ""),
        str(span.get("spanId") or ""),
        str(span.get("parentSpanId") or ""),
        str(span.get("traceState") or ""),
        str(span.get("name") or ""),
        KIND_NAMES.get(int(span.get("kind") or 0), "Unspecified"),
        res_attrs.get("service.name", ""),
        res_attrs,
        str(scope.get("name") or ""),
        str(scope.get("version") or ""),
        attribute_map(span.get("attributes")),
        max(0, end - start),
        STATUS_NAMES.get(int(code or 0), "Unset"),
        str(status.get("message") or ""),
        [ns_value(int(e.get("timeUnixNano") or 0)) for e in events],
        [str(e.get("name") or "") for e in events],
        [attribute_map(e.get("attributes")) for e in events],
        [str(link.get("traceId") or "") for link in links],
        [str(link.get("spanId") or "") for link in links],
        [str(link.get("traceState") or "") for link in links],
        [attribute_map(link.get("attributes")) for link in links],
    ]


# -- row -> OTLP/JSON (what the index reads) -------------------------------------------------

# The columns index/resolve.py reads, in order (Timestamp as integer nanoseconds).
# SPAN_HASH is what a conversation's fingerprint sums (index/clickhouse.py): read with the
# spans, a replay fingerprints what it replayed without asking again.
SPAN_HASH = "cityHash64(SpanId, Timestamp, Duration, StatusCode)"
# The span attributes the app reads (index/resolve.py), each fetched as a column of its
# own (NULL when the span has none): turning whole attribute maps into Python dicts was
# most of what fetching a conversation cost.
ATTRIBUTES = (
    "gen_ai.conversation.id", "gen_ai.operation.name", "gen_ai.system_instructions",
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.request.model",
    "gen_ai.provider.name", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
    "commons.provenance.tag", "commons.citation.candidates",
    "gen_ai.response.finish_reasons", "error.type",
    *(k for k in SESSION_KEYS if k != "gen_ai.conversation.id"),
)  # fmt: skip
# Other recorders' model calls (sources/conventions.py) are read by their readers from the
# whole attribute map and the events: fetched for those spans alone (MARKED, a SQL
# condition), an empty map and no events for every other span.
MARKED = (
    f"(hasAny(mapKeys(SpanAttributes), {list(MARK_KEYS)!r}) OR "
    f"hasAny(Events.Name, {list(MARK_EVENTS)!r}))"
)
READ_COLUMNS = (
    "toUnixTimestamp64Nano(Timestamp)", "TraceId", "SpanId", "ParentSpanId", "SpanName",
    "SpanKind", "Duration", "StatusCode", "StatusMessage", SPAN_HASH,
    *(f"if(mapContains(SpanAttributes, '{k}'), SpanAttributes['{k}'], NULL)"
      for k in ATTRIBUTES),
    MARKED,
)  # fmt: skip
# A marked span's whole map and its events, asked for those spans alone: an empty map and
# two empty arrays decoded in Python for every other span held up a bulk read
# (docs/performance-log.md, "Second session of #50").
MARKED_COLUMNS = ("TraceId", "SpanId", "SpanAttributes", "Events.Name", "Events.Attributes")


def any_value(key: str, text: str) -> dict[str, Any]:
    """An attribute's text as ClickHouse keeps it, as the OTLP/JSON AnyValue it was
    recorded as."""
    if key in ARRAY_ATTRIBUTES and text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError:
            items = None
        if isinstance(items, list) and all(isinstance(i, str) for i in items):
            return {"arrayValue": {"values": [{"stringValue": i} for i in items]}}
    return {"stringValue": text}


def status_fields(status: str, message: str | None) -> tuple[str | None, str | None]:
    """The span status as the file index reads it: (code, message), both None when the
    span recorded none (the exporter writes "Unset" and "" for that)."""
    code = _STATUS_CODES.get(status, 0)
    if code or message:
        return str(code), message or ""
    return None, None
