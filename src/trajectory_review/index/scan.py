"""The scan: one columnar DuckDB pass over every trace line into `spans` (a row per span,
and a row per line that holds none), with what the index reads of each span pulled out,
and the names the rest of the index and the ClickHouse reader share (commons' span names,
the model-call operations, the columns kept)."""

from __future__ import annotations

import json
from typing import Any

import duckdb

from trajectory_review import settings
from trajectory_review.index import titles
from trajectory_review.index.database import scan_ended, scan_started
from trajectory_review.index.lines import MAX_NAMED_LINES
from trajectory_review.index.rows import STRUCTURED_MARK
from trajectory_review.sources.conventions import SCRUBBED, convention_sql, session_sql
from trajectory_review.sources.files import not_otlp_reason

TURN_SPAN = "commons_conversation_turn"
# Today's commons (R and Python) also records a turn's decisions on a child span set when
# it starts: Posit Connect can keep a span's attributes as they were at its start, when
# the turn span has no tag or candidates yet. A turn's record is read from its latest
# such descendant; only a turn with none falls back to its own attributes.
PROVENANCE_SPAN = "commons_provenance"
_MARK = ord(STRUCTURED_MARK)  # index.rows: how a value other than a string is stored
# Every chat span repeats the whole history, so one big tool result can push a line past
# DuckDB's default limit (the conversation then silently showed an older state). Lines
# are read up to TRAJECTORY_MAX_LINE_MB (default 64); a longer one is skipped and named.
# DuckDB's read buffer, in lines of the maximum size. A line longer than the buffer is
# dropped by DuckDB without a line number (and shifts the numbers after it), so the
# buffer is kept well above the limit: lines up to this many times the limit are named.
BUFFER_LINES = 4
# strict_mode=false: a file mixing CRLF and LF line ends (a log line appended by another
# tool) is otherwise "invalid" to DuckDB's CSV reader as a whole.
# How far up a chat span's parents are followed for its conversation id and record.
MAX_ANCESTORS = 1024
# Characters of a skipped line kept to find its line number again.
_HEAD = 120


def _session_value(key: str) -> str:
    """The scan's expression for one session key's value (sources/conventions.session_sql)."""
    return f"session_value(sval(attr(x.attributes, keys, '{key}')))"


def max_line_bytes() -> int:
    return settings.max_line_bytes()


_SPAN_TYPE = (
    '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"VARCHAR","spanId":"VARCHAR",'
    '"parentSpanId":"VARCHAR","name":"VARCHAR","startTimeUnixNano":"VARCHAR",'
    '"endTimeUnixNano":"VARCHAR","status":{"code":"VARCHAR","message":"VARCHAR"},'
    '"attributes":[{"key":"VARCHAR","value":{"stringValue":"VARCHAR","intValue":"VARCHAR",'
    '"boolValue":"BOOLEAN","doubleValue":"DOUBLE","bytesValue":"VARCHAR","arrayValue":"JSON",'
    '"kvlistValue":"JSON"}}],"events":"JSON"}]}]}]}'
)
# Span columns stored with zstd (see ingest): the payloads, most of an index's bytes, and
# two ids only the build reads.
ZSTD_COLUMNS = (
    "input_messages",
    "output_messages",
    "system_instructions",
    "parent_id",
    "conv_attr",
)
# What the index keeps of each chat span's mark (ingest): its conversation and its turn's
# record, which an open reads beside the span's own columns (store.TraceIndex.chat_rows);
# each with how it is stored (see ingest; None: as DuckDB chooses).
MARK_COLUMNS = (
    ("conversation_id", "VARCHAR", "uncompressed"),
    ("row_id", "BIGINT", None),
    ("turn_span_id", "VARCHAR", "uncompressed"),
    ("has_turn", "BOOLEAN", None),
    ("turn_tag", "VARCHAR", "uncompressed"),
    ("turn_candidates", "VARCHAR", None),
)
# Columns the scan computes for its own use, not kept: the operation's name is read once
# for two of its tests.
SCAN_ONLY = ("operation",)
SCAN_ONLY_SQL = ", ".join(SCAN_ONLY)
# Model calls, as every GenAI recorder names them: chat APIs, Gemini/Vertex's
# generate_content, completion APIs (docs/spec.md §1, chat spans).
INFERENCE_OPERATIONS = ("chat", "generate_content", "text_completion")


# Long on purpose: one SQL statement built from fragments, each beside why it is so.
def scan_lines(
    con: duckdb.DuckDBPyConnection, files: list[str], limit: int, compressed: bool = True
) -> tuple[int, int, list[Any]]:
    """Scan: every line of the files into `spans` (one row per span, and a row per line
    that holds none), with the attributes the app reads pulled out. Returns the lines,
    the bad lines, and the lines DuckDB could not read at all (named later).
    compressed: the index is a file, whose payload columns are stored with zstd.
    One statement built from SQL fragments, most of this function; its comments say why
    each fragment is as it is."""
    # One pass over the sources writes every span once, with the attributes the app reads
    # already pulled out. The payload (message histories, most of the bytes) is written
    # here and never copied again: the later steps read only the small columns and mark
    # the chat rows in place. A line that is not JSON becomes NULL under try(). Each
    # line's spans are gathered into one list and unnested once (one level at a time
    # copied every span three times); its first row, or a row of its own when it has no
    # span, is its `line_start`, so lines and bad lines are counted in the same pass. A
    # line with one resource and one scope (the usual line: one recorder's export batch)
    # takes its span list as it is: gathering it through flatten and list_transform
    # copied every span, histories included, once more (docs/performance-log.md, "one
    # pass over the sources").
    # attr(): one attribute's AnyValue (the first with that key), parsed into its typed
    # fields as the line is read; the keys are listed once per span, not once per lookup.
    # sval(): its scalar as text. stored(): the value as the index keeps it
    # (index.rows.stored_attribute): a string as itself, anything else marked, as its
    # AnyValue JSON. Typed, a value is never written back out as JSON (the histories were
    # written out and escaped again, each scalar parsed again for sval()). What only a
    # model call's row or a turn's record is read for is looked up on those spans alone,
    # not on every span (docs/performance-log.md, "typed attributes").
    con.execute("CREATE TEMP MACRO attr(a, keys, k) AS a[list_position(keys, k)].value")
    con.execute("CREATE TEMP MACRO sval(v) AS coalesce(v.stringValue, v.intValue)")
    # a session id Logfire scrubbed names no session (conventions.SCRUBBED)
    con.execute(
        f"CREATE TEMP MACRO session_value(v) AS CASE WHEN starts_with(v, '{SCRUBBED}') "
        "THEN NULL ELSE v END"
    )
    con.execute(
        f"""
        CREATE TEMP MACRO structured(v) AS CASE
          WHEN v IS NOT NULL THEN chr({_MARK}) || CASE
            WHEN v.stringValue IS NOT NULL THEN json_object('stringValue', v.stringValue)
            WHEN v.arrayValue IS NOT NULL THEN json_object('arrayValue', v.arrayValue)
            WHEN v.kvlistValue IS NOT NULL THEN json_object('kvlistValue', v.kvlistValue)
            WHEN v.intValue IS NOT NULL THEN json_object('intValue', v.intValue)
            WHEN v.boolValue IS NOT NULL THEN json_object('boolValue', v.boolValue)
            WHEN v.doubleValue IS NOT NULL THEN json_object('doubleValue', v.doubleValue)
            WHEN v.bytesValue IS NOT NULL THEN json_object('bytesValue', v.bytesValue)
            ELSE '{{}}' END
        END
        """
    )
    # A macro's argument is evaluated where it is named: the string's own case names it
    # twice, the rest only for the few values that are not a string (docs/performance-log.md,
    # "macro arguments").
    con.execute(
        f"CREATE TEMP MACRO stored(v) AS CASE WHEN starts_with(v.stringValue, chr({_MARK})) "
        "IS FALSE THEN v.stringValue ELSE structured(v) END"
    )

    con.execute(titles.duckdb_macro())  # title_call(t): index/titles.py

    # Long on purpose: one SQL statement, the scan, assembled in the order DuckDB runs it.
    def scan_with(parse: str) -> str:
        return f"""
        WITH raw AS (
          SELECT filename, line
          FROM read_csv($files, columns={{'line': 'VARCHAR'}}, delim=E'\\x1f', quote='',
                        escape='', header=false, filename=true, auto_detect=false,
                        max_line_size=$max, buffer_size=$buf, ignore_errors=true,
                        strict_mode=false,
                        store_rejects=true, rejects_table='line_rejects',
                        rejects_scan='line_reject_scans', rejects_limit=$named)
          -- blank lines are skipped; only a line starting with a space is trimmed to
          -- tell (trimming every line copied all of them: a fifth of the scan)
          WHERE line IS NOT NULL AND line <> '' AND (left(line, 1) <> ' ' OR trim(line) <> '')
        ),
        parsed AS (SELECT filename, line, {parse} AS e FROM raw),
        judged AS (
          SELECT filename, line, e,
                 CASE WHEN e IS NULL THEN 'not JSON'
                      WHEN e.resourceSpans IS NULL THEN 'JSON but not an OTLP envelope'
                 END AS problem
          FROM parsed
        ),
        lines AS (
          SELECT filename, problem,
                 CASE WHEN problem IS NOT NULL THEN left(line, {_HEAD}) END AS line_head,
                 CASE WHEN problem IS NOT NULL THEN strlen(line) || ':' || md5(line)
                 END AS line_key,
                 CASE WHEN len(e.resourceSpans) = 1 AND len(e.resourceSpans[1].scopeSpans) = 1
                           AND len(e.resourceSpans[1].scopeSpans[1].spans) > 0
                      THEN e.resourceSpans[1].scopeSpans[1].spans
                      -- a bad line (e or its resourceSpans NULL) and a line of no span
                      -- become [NULL]: one row, to be counted
                      ELSE coalesce(nullif(flatten(list_transform(e.resourceSpans,
                             lambda r: flatten(list_transform(r.scopeSpans, lambda s: s.spans)))),
                           []), [NULL])
                 END AS xs
          FROM judged
        ),
        sp AS (SELECT filename, problem, line_head, line_key, unnest(xs) AS x,
                      generate_subscripts(xs, 1) = 1 AS line_start
               FROM lines),
        sk AS (SELECT *, list_transform(x.attributes, lambda a: a.key) AS keys FROM sp),
        -- What several columns are made from is worked out a layer below them, once: a
        -- name given in the same SELECT is replaced by its whole expression wherever it
        -- is named, and with each value's lookup written out in every column that reads
        -- it, DuckDB took longer to plan the scan than to scan a small corpus
        -- (docs/performance-log.md, "planning the scan"). The lookups stay behind the
        -- span's kind, as before: most spans are neither model calls nor turns.
        op AS (SELECT *, sval(attr(x.attributes, keys, 'gen_ai.operation.name')) AS operation,
                      operation IN {INFERENCE_OPERATIONS} AS is_chat FROM sk),
        av AS (SELECT *,
                      CASE WHEN is_chat THEN attr(x.attributes, keys, 'gen_ai.input.messages')
                      END AS v_input,
                      CASE WHEN is_chat THEN attr(x.attributes, keys, 'gen_ai.output.messages')
                      END AS v_output,
                      CASE WHEN is_chat THEN
                        attr(x.attributes, keys, 'gen_ai.system_instructions')
                      END AS v_system,
                      CASE WHEN is_chat THEN
                        attr(x.attributes, keys, 'gen_ai.response.finish_reasons')
                      END AS v_finish,
                      CASE WHEN is_chat THEN attr(x.attributes, keys, 'error.type')
                      END AS v_error,
                      CASE WHEN x.name IN ('{TURN_SPAN}', '{PROVENANCE_SPAN}') THEN
                        attr(x.attributes, keys, 'commons.provenance.tag')
                      END AS v_tag,
                      CASE WHEN x.name IN ('{TURN_SPAN}', '{PROVENANCE_SPAN}') THEN
                        attr(x.attributes, keys, 'commons.citation.candidates')
                      END AS v_candidates
               FROM op),
        cols AS (
        SELECT line_start, problem IS NOT NULL AS bad, problem, line_head, line_key,
               x.traceId AS trace_id, x.spanId AS span_id,
               nullif(x.parentSpanId, '') AS parent_id, x.name AS name,
               try_cast(x.startTimeUnixNano AS HUGEINT) AS start_ns,
               try_cast(x.endTimeUnixNano AS HUGEINT) AS end_ns, filename,
               -- the conversation: gen_ai.conversation.id, else the recorder's own
               -- session or thread (sources/conventions.py)
               {session_sql(_session_value, "keys")} AS conv_attr,
               operation, is_chat,
               stored(v_input) AS input_messages,
               stored(v_output) AS output_messages,
               stored(v_system) AS system_instructions,
               -- a title call (left out of the conversations), told while the instructions
               -- are in hand: told later (skel), the instructions of every chat span were
               -- read back and unpacked. On the string as recorded: one the index marks (a
               -- structured value, or a string starting with the mark) is JSON of neither
               -- kind and no title, as it was when told on the stored form.
               CASE WHEN is_chat THEN title_call(v_system.stringValue) END AS is_title,
               CASE WHEN is_chat THEN sval(attr(x.attributes, keys, 'gen_ai.request.model'))
               END AS model,
               CASE WHEN is_chat THEN sval(attr(x.attributes, keys, 'gen_ai.provider.name'))
               END AS provider,
               CASE WHEN is_chat THEN try_cast(sval(attr(x.attributes, keys,
                                                    'gen_ai.usage.input_tokens')) AS BIGINT)
               END AS input_tokens,
               CASE WHEN is_chat THEN try_cast(sval(attr(x.attributes, keys,
                                                    'gen_ai.usage.output_tokens')) AS BIGINT)
               END AS output_tokens,
               stored(v_tag) AS tag,
               stored(v_candidates) AS candidates,
               stored(v_finish) AS finish_reasons,
               x.status.code AS status_code, x.status.message AS status_message,
               stored(v_error) AS error_type,
               x.traceId IS NOT NULL AND x.spanId IS NOT NULL AS is_span,
               keys, x.attributes AS x_attributes, x.events AS x_events
        FROM av WHERE line_start OR (x.traceId IS NOT NULL AND x.spanId IS NOT NULL)
        )
        -- The columns made of the columns above, in a SELECT of their own for the same
        -- reason: beside them, these three repeated the payloads' expressions and the
        -- conventions'.
        SELECT * EXCLUDE (is_span, keys, x_attributes, x_events),
               -- said here, while the payloads are in hand: asked later, it read them again
               input_messages IS NULL AND output_messages IS NULL AS no_messages,
               -- another recorder's model call, whose messages are under its own names
               -- (sources/conventions.py): read by its reader after the scan, or said,
               -- never a silent empty. A span of another operation (a tool's, an
               -- agent's) is none, whatever keys it carries: ADK puts an empty
               -- llm_request on its tool spans.
               CASE WHEN no_messages AND (operation IS NULL OR is_chat) THEN
                 {
            convention_sql(
                "keys",
                "json_extract_string(x_events, '$[*].name')",
                "is_chat",
                "x_events IS NOT NULL",
            )
        }
               END AS foreign_call,
               CASE WHEN foreign_call IS NOT NULL THEN
                 json_object('attributes', x_attributes, 'events', x_events)
               END AS foreign_raw,
               is_span,
               NULL::VARCHAR AS conversation_id
        FROM cols
        """

    # A line is parsed under try() (its error: a NULL, the line counted as not JSON) only
    # when it does not end in "}": try() copies what it returns, every span of the line
    # with its histories (a tenth of the scan's samples at a million spans). A line
    # ending in "}" that is not JSON after all (two objects run together) fails the
    # statement, which is then run again with every line under try(): one such line
    # costs a second scan, never a line lost.
    fast = scan_with(
        f"CASE WHEN ends_with(line, '}}') THEN from_json(line, '{_SPAN_TYPE}') "
        f"ELSE try(from_json(line, '{_SPAN_TYPE}')) END"
    )
    careful = scan_with(f"try(from_json(line, '{_SPAN_TYPE}'))")
    params = {"files": files, "max": limit, "buf": BUFFER_LINES * limit, "named": MAX_NAMED_LINES}
    if compressed:
        # The payloads, the parent ids and the conversation ids are stored compressed
        # with zstd (ZSTD_COLUMNS): DuckDB's default for strings (its dictionary and FSST
        # analysis) costs more on histories that repeat one another, and an open pays
        # little for zstd (docs/performance-log.md, "zstd columns"). The span and trace
        # ids, which every open reads, keep the default.
        columns = con.execute("DESCRIBE " + careful, params).fetchall()
        con.execute(
            "CREATE TABLE spans ("
            + ", ".join(
                f"{name} {kind}" + (" USING COMPRESSION zstd" if name in ZSTD_COLUMNS else "")
                for name, kind, *_ in columns
                if name not in SCAN_ONLY
            )
            + ")"
        )
        write = "INSERT INTO spans"
    else:
        # An index in memory is not compressed: the table is made by the scan itself,
        # whose columns it has, and the scan is planned once, not twice (a DESCRIBE first
        # planned all of it for the column list).
        write = "CREATE TABLE spans AS"
    scan_started(con)  # build_progress: how far this statement is
    done = False
    try:
        try:
            con.execute(f"{write} SELECT * EXCLUDE ({SCAN_ONLY_SQL}) FROM ({fast})", params)
        except duckdb.InvalidInputException:  # a line ending in "}" that is not JSON
            con.execute(f"{write} SELECT * EXCLUDE ({SCAN_ONLY_SQL}) FROM ({careful})", params)
        done = True
    finally:
        scan_ended(con, done)
    lines, bad = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE bad) FROM spans WHERE line_start"
    ).fetchall()[0]
    # Lines DuckDB could not even read (too long, not UTF-8) are lines too, and bad ones.
    rejected = con.execute(
        "SELECT s.file_path, e.line, e.error_type FROM line_rejects e "
        "JOIN line_reject_scans s USING (scan_id, file_id) ORDER BY ALL"
    ).fetchall()
    con.execute("DROP TABLE line_rejects")
    con.execute("DROP TABLE line_reject_scans")
    return int(lines), int(bad), rejected


def drop_not_otlp(con: duckdb.DuckDBPyConnection, shown: dict[str, str]) -> tuple[list[str], int]:
    """Drop non-OTLP: a file of JSON lines none of which is an envelope leaves `spans`
    with one note naming it. Returns the notes and the lines dropped."""
    # A file whose every line is JSON but none an envelope is not OTLP/JSON lines at all:
    # one warning naming it, not a bad line per line.
    not_otlp = con.execute(
        "SELECT filename, any_value(line_head) FROM spans WHERE line_start GROUP BY filename "
        "HAVING count(*) = count(*) FILTER (WHERE problem = 'JSON but not an OTLP envelope')"
    ).fetchall()
    file_notes = []
    for filename, head in not_otlp:
        try:
            reason = not_otlp_reason(json.loads(head))
        except ValueError:  # the head is cut: say what is known
            reason = not_otlp_reason({"resource_spans": 1} if '"resource_spans"' in head else None)
        file_notes.append(f"{shown.get(filename, filename)}: {reason}, skipped")
    if not_otlp:
        skip = [f for f, _ in not_otlp]
        n = con.execute(
            "SELECT count(*) FROM spans WHERE line_start AND list_contains($f, filename)",
            {"f": skip},
        ).fetchall()[0][0]
        con.execute(
            "DELETE FROM spans WHERE line_start AND list_contains($f, filename)", {"f": skip}
        )
        return file_notes, int(n)
    return file_notes, 0
