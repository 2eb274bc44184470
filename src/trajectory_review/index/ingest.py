"""Building the DuckDB index: one columnar scan of the trace lines into spans, chat rows
and turn records, with every line DuckDB cannot read named by file and line.

Long on purpose: the index's SQL, each statement beside the reason it is shaped so."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from trajectory_review import settings
from trajectory_review.index import titles
from trajectory_review.index.foreign import read_foreign
from trajectory_review.index.lines import MAX_NAMED_LINES, name_bad_lines
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


@dataclass(frozen=True)
class IndexStats:
    files: int
    lines: int
    bad_lines: int
    spans: int
    chat_spans: int
    title_calls: int
    conversations: int
    chat_spans_without_messages: int
    bad_files: tuple[str, ...] = ()
    # every skipped line as "file:line: reason", the first MAX_NAMED_LINES of them
    bad_line_details: tuple[str, ...] = ()
    skipped_files: tuple[str, ...] = ()  # sources left out before reading, and why
    span_warnings: tuple[str, ...] = ()  # differing duplicates, ancestor walks cut short
    # (convention, spans): other recorders' model calls whose messages are not read
    foreign_calls: tuple[tuple[str, int], ...] = ()


SCRATCH_PREFIX = "trajectory-review-"

# Connections an index is being built on (fresh_database), for interrupt_builds.
_building: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
# Those in the first statement, the scan of the trace lines: most of a build, and the
# one DuckDB can say how far it is (docs/performance-log.md, "the scan's share of a
# build"); then those past it, until the build is done.
_scanning: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
_scanned: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
# The furthest each scan was seen to be: DuckDB's figure drops to 0 once the statement
# has returned, and a page drawn between that and the scan being marked done showed the
# bar going back from 98% to 0 (a test caught it on a loaded machine).
_furthest: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, float] = weakref.WeakKeyDictionary()
SCAN_SHARE = 0.75


def build_progress() -> float | None:
    """How far this process's index build is (0-1), for the progress page: the scan's
    own progress over its share of the build, then that share until the build is done;
    None when no build is under way (the page then shows no bar)."""
    done = [SCAN_SHARE for _ in list(_scanned)]
    for con in list(_scanning):
        try:
            pct = con.query_progress()  # -1 until DuckDB has a figure
        except duckdb.Error:
            continue  # closed meanwhile
        share = SCAN_SHARE * max(0.0, min(pct, 100.0)) / 100
        _furthest[con] = share = max(share, _furthest.get(con, 0.0))
        done.append(share)
    return max(done) if done else None


def interrupt_builds() -> None:
    """Interrupt every index build of this process, each in its statement (it raises
    DuckDB's InterruptException there). For a server stopping: Python exiting while a
    thread is inside DuckDB aborts the process."""
    for con in list(_building):
        try:
            con.interrupt()
        except duckdb.Error:
            pass  # closed meanwhile: nothing to interrupt


# DuckDB's memory while an index is built in a file: up to BUILD_MEMORY where that is at
# most a quarter of the memory DuckDB sees (a container's limit included), never less than
# the limit it keeps for queries after: more than 2 GB gained nothing
# (docs/performance-log.md, "build memory"). An index in memory (small traces) keeps its
# limit throughout: no faster with more, it would pay for setting it back (built_database).
BUILD_MEMORY = 2 * 1024**3
BUILD_SHARE = "25%"
# Databases given more memory for their build (fresh_database), until built_database.
_more_memory: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
_UNITS = {"bytes": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4, "PiB": 1024**5}


def fresh_database(
    path: Path | None, memory_limit: str, spill: Path | None = None, threads: int | None = None
) -> duckdb.DuckDBPyConnection:
    """A new database at `path`, or in memory (path None) spilling past the memory limit
    to `spill`: an index nobody keeps is never written out whole (writing a file costs;
    docs/performance-log.md), yet a million chat spans of history still fit.
    threads: DuckDB's threads while it is built (default: one per core). memory_limit:
    DuckDB's once it is built (built_database); the build may use more (BUILD_MEMORY)."""
    if path is None:
        con = duckdb.connect()
        if spill is not None:
            con.execute("SET temp_directory = ?", [str(spill)])
    else:
        for stale in (path, path.with_name(path.name + ".wal")):
            if stale.exists():
                stale.unlink()
        con = duckdb.connect(str(path))
    _building.add(con)
    con.execute(f"SET memory_limit='{memory_limit}'")
    if path is not None:
        keep = _memory_limit(con)
        con.execute(f"SET memory_limit='{BUILD_SHARE}'")
        share = _memory_limit(con)
        build = min(BUILD_MEMORY, share) if share is not None else None
        if keep is not None and build is not None and build > keep:
            con.execute(f"SET memory_limit='{build}B'")
            _more_memory.add(con)
        else:  # a small machine (or a figure not understood): the limit it keeps
            con.execute(f"SET memory_limit='{memory_limit}'")
    # progress is tracked (build_progress) but never drawn on a user's terminal
    con.execute("SET enable_progress_bar=true")
    con.execute("SET enable_progress_bar_print=false")
    con.execute("SET progress_bar_time=100")  # ms before DuckDB starts counting (2,000)
    con.execute("SET preserve_insertion_order=false")
    if threads is not None:
        con.execute(f"SET threads={int(threads)}")
    return con


def built_database(con: duckdb.DuckDBPyConnection, memory_limit: str, threads: bool) -> None:
    """A database fresh_database gave, once its index is built: queried with the memory
    it keeps (and every core, when the build was given fewer threads)."""
    if con in _more_memory:  # only then: setting the limit takes DuckDB a while
        con.execute(f"SET memory_limit='{memory_limit}'")
        _more_memory.discard(con)
    if threads:
        con.execute("RESET threads")


def _memory_limit(con: duckdb.DuckDBPyConnection) -> int | None:
    """DuckDB's memory limit in bytes, from the text it shows it as ("953.6 MiB"); None
    for a text of another shape (a later DuckDB's), which then changes nothing."""
    text = str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
    number, _, unit = text.partition(" ")
    try:
        return int(float(number) * _UNITS[unit])
    except (ValueError, KeyError):
        return None


def scratch_dir() -> Path:
    """A fresh directory for an uncached index, after removing those of dead processes.

    A process killed outright never runs its clean-up; its pid in the name lets the next
    start tell its leftovers from a live process's index.
    """
    root = Path(tempfile.gettempdir())
    pattern = re.compile(re.escape(SCRATCH_PREFIX) + r"(\d+)-")
    for entry in root.glob(SCRATCH_PREFIX + "*"):
        m = pattern.match(entry.name)
        if m and not _alive(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def discard(con: duckdb.DuckDBPyConnection, scratch: Path | None) -> None:
    con.close()
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


def unnamed_note(conversations: int) -> tuple[str, ...]:
    """The one warning for conversations whose id is their trace id (no span names one)."""
    if not conversations:
        return ()
    return (
        f"{conversations:,} conversation(s) carry no gen_ai.conversation.id on any span: "
        "each trace is shown as a conversation of its own. Set the chat's conversation id "
        "where it is recorded (commons sets it on its turn span; chatlas, when the app "
        "gives the chat an id)",
    )


def ingest(
    con: duckdb.DuckDBPyConnection, files: list[str], shown: dict[str, str] | None = None
) -> IndexStats:
    """Read the trace lines into the index: named steps run in order, which share their
    state as DuckDB temporary tables (each step says which it writes and reads)."""
    shown = shown or {}
    limit = max_line_bytes()
    lines, bad, rejected = _scan(con, files, limit)
    file_notes, skipped = _drop_not_otlp(con, shown)
    lines, bad = lines - skipped, bad - skipped
    named = name_bad_lines(con, rejected, limit, shown)
    lines += len(rejected)
    bad += len(rejected)
    read_foreign(con)
    _skeleton(con)
    duplicates = _deduplicate(con)
    deep = _walk_up(con)
    _mark_chat_rows(con)
    _write_index(con)
    counts = _counts(con)
    _scanned.discard(con)
    return IndexStats(
        files=len(files),
        lines=int(lines),
        bad_lines=int(bad),
        spans=int(counts[0]),
        chat_spans=int(counts[1]),
        title_calls=int(counts[2]),
        conversations=int(counts[3]),
        chat_spans_without_messages=int(counts[4]),
        foreign_calls=counts[5],
        bad_line_details=named,
        skipped_files=tuple(file_notes),
        span_warnings=duplicates + deep,
    )


# Long on purpose: one SQL statement built from fragments, each beside why it is so.
def _scan(
    con: duckdb.DuckDBPyConnection, files: list[str], limit: int
) -> tuple[int, int, list[Any]]:
    """Scan: every line of the files into `spans` (one row per span, and a row per line
    that holds none), with the attributes the app reads pulled out. Returns the lines,
    the bad lines, and the lines DuckDB could not read at all (named later).
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
        sk AS (SELECT *, list_transform(x.attributes, lambda a: a.key) AS keys FROM sp)
        SELECT line_start, problem IS NOT NULL AS bad, problem, line_head, line_key,
               x.traceId AS trace_id, x.spanId AS span_id,
               nullif(x.parentSpanId, '') AS parent_id, x.name AS name,
               try_cast(x.startTimeUnixNano AS HUGEINT) AS start_ns,
               try_cast(x.endTimeUnixNano AS HUGEINT) AS end_ns, filename,
               -- the conversation: gen_ai.conversation.id, else the recorder's own
               -- session or thread (sources/conventions.py)
               {session_sql(_session_value, "keys")} AS conv_attr,
               sval(attr(x.attributes, keys, 'gen_ai.operation.name')) AS operation,
               operation IN {INFERENCE_OPERATIONS} AS is_chat,
               CASE WHEN is_chat THEN
                 stored(attr(x.attributes, keys, 'gen_ai.input.messages'))
               END AS input_messages,
               CASE WHEN is_chat THEN
                 stored(attr(x.attributes, keys, 'gen_ai.output.messages'))
               END AS output_messages,
               CASE WHEN is_chat THEN
                 stored(attr(x.attributes, keys, 'gen_ai.system_instructions'))
               END AS system_instructions,
               -- a title call (left out of the conversations), told while the instructions
               -- are in hand: told later (skel), the instructions of every chat span were
               -- read back and unpacked. On the string as recorded: one the index marks (a
               -- structured value, or a string starting with the mark) is JSON of neither
               -- kind and no title, as it was when told on the stored form.
               CASE WHEN is_chat THEN title_call(attr(x.attributes, keys,
                                                      'gen_ai.system_instructions').stringValue)
               END AS is_title,
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
               CASE WHEN x.name IN ('{TURN_SPAN}', '{PROVENANCE_SPAN}') THEN
                 stored(attr(x.attributes, keys, 'commons.provenance.tag'))
               END AS tag,
               CASE WHEN x.name IN ('{TURN_SPAN}', '{PROVENANCE_SPAN}') THEN
                 stored(attr(x.attributes, keys, 'commons.citation.candidates'))
               END AS candidates,
               CASE WHEN is_chat THEN
                 stored(attr(x.attributes, keys, 'gen_ai.response.finish_reasons'))
               END AS finish_reasons,
               x.status.code AS status_code, x.status.message AS status_message,
               CASE WHEN is_chat THEN stored(attr(x.attributes, keys, 'error.type'))
               END AS error_type,
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
                "json_extract_string(x.events, '$[*].name')",
                "is_chat",
                "x.events IS NOT NULL",
            )
        }
               END AS foreign_call,
               CASE WHEN foreign_call IS NOT NULL THEN
                 json_object('attributes', x.attributes, 'events', x.events)
               END AS foreign_raw,
               x.traceId IS NOT NULL AND x.spanId IS NOT NULL AS is_span,
               NULL::VARCHAR AS conversation_id
        FROM sk WHERE line_start OR (x.traceId IS NOT NULL AND x.spanId IS NOT NULL)
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
    # The payloads, the parent ids and the conversation ids are stored compressed with
    # zstd (ZSTD_COLUMNS): DuckDB's default for strings (its dictionary and FSST analysis)
    # costs more on histories that repeat one another, and an open pays little for zstd
    # (docs/performance-log.md, "zstd columns"). The span and trace ids, which every open
    # reads, keep the default. An index in memory is not compressed.
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
    _scanning.add(con)  # build_progress: how far this statement is
    try:
        try:
            con.execute(
                f"INSERT INTO spans SELECT * EXCLUDE ({SCAN_ONLY_SQL}) FROM ({fast})", params
            )
        except duckdb.InvalidInputException:  # a line ending in "}" that is not JSON
            con.execute(
                f"INSERT INTO spans SELECT * EXCLUDE ({SCAN_ONLY_SQL}) FROM ({careful})", params
            )
        _scanned.add(con)
    finally:
        _scanning.discard(con)
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


def _drop_not_otlp(con: duckdb.DuckDBPyConnection, shown: dict[str, str]) -> tuple[list[str], int]:
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


def _skeleton(con: duckdb.DuckDBPyConnection) -> None:
    """Skeleton: `skel`, the small columns of every span, which the later steps read."""
    # The small columns of every span, one row each, in one table the later steps read
    # instead of the spans: the copies, the walk up, the chat rows, the turn records. Read
    # from the spans once, not once per step (docs/performance-log.md, "the skeleton
    # table"). `k` and `up` are the span's and its parent's ids hashed with the trace id,
    # for the walk up and for finding copies.
    con.execute(
        f"""
        CREATE TEMP TABLE skel AS
        SELECT rowid AS row_id, trace_id, span_id, conv_attr, is_chat,
               hash(trace_id, span_id) AS k,
               CASE WHEN parent_id IS NOT NULL THEN hash(trace_id, parent_id) END AS up,
               name = '{TURN_SPAN}' AS is_turn,
               name = '{PROVENANCE_SPAN}' AS is_prov,
               CASE WHEN is_chat OR name = '{PROVENANCE_SPAN}' THEN coalesce(start_ns, 0)
               END AS start_ns,
               CASE WHEN is_chat OR name = '{PROVENANCE_SPAN}'
                    THEN coalesce(end_ns, start_ns, 0) END AS end_ns,
               CASE WHEN is_chat THEN no_messages END AS no_messages,
               is_title, foreign_call,
               CASE WHEN name IN ('{TURN_SPAN}', '{PROVENANCE_SPAN}') THEN tag END AS tag,
               CASE WHEN name IN ('{TURN_SPAN}', '{PROVENANCE_SPAN}') THEN candidates
               END AS candidates
        FROM spans WHERE is_span
        """
    )


def _deduplicate(con: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
    """De-duplicate: each span once in `skel`. Returns a warning per span recorded twice
    with different content."""
    # A span seen twice (rotated file + trace-latest hard link) is kept once: its copy in
    # the first file that has it. Deciding on the keys alone keeps the big payloads from
    # being sorted; of a copy repeated inside one file, the first row is kept.
    # The keys seen more than once are found by their 64-bit hash first (skel's `k`),
    # then grouped by the keys themselves among those few, not every span by its two ids.
    # A hash shared by two different spans only adds a candidate, which the grouping by
    # the ids themselves leaves out again. Found in skel, after it is written, and its
    # copies deleted from it: found in the spans first, every span's ids were read and
    # hashed twice more (docs/performance-log.md, "finding copies").
    con.execute("CREATE TEMP TABLE twice AS SELECT k AS h FROM skel GROUP BY k HAVING count(*) > 1")
    # The rows of those candidates, by row id: the steps below read the spans again only
    # for these rows, which DuckDB fetches by their row ids alone (each step joining the
    # spans on the two ids scanned every span's ids again; docs/performance-log.md, "copy
    # rows by row id").
    con.execute(
        "CREATE TEMP TABLE copy_rows AS SELECT rowid AS row_id, trace_id, span_id, filename "
        "FROM spans WHERE rowid IN (SELECT row_id FROM skel SEMI JOIN twice ON k = h)"
    )
    con.execute(
        "CREATE TEMP TABLE copies AS SELECT trace_id, span_id, min(filename) AS filename, "
        "count(*) AS copies FROM copy_rows GROUP BY trace_id, span_id HAVING count(*) > 1"
    )
    # Copies that differ (a recorder reusing ids, a file edited by hand): which one wins
    # must be said, not silently decided. Compared on cheap columns (names, times,
    # parents, the byte lengths of the payloads), and only for spans seen more than once:
    # comparing every span read the payloads of all of them (docs/performance-log.md).
    con.execute(
        "CREATE TEMP TABLE variants AS SELECT trace_id, span_id, "
        "  count(DISTINCT (name, start_ns, end_ns, parent_id, strlen(input_messages), "
        "                  strlen(output_messages), tag, candidates, conv_attr)) AS variants "
        "FROM spans WHERE rowid IN (SELECT row_id FROM copy_rows SEMI JOIN copies "
        "                           USING (trace_id, span_id)) "
        "GROUP BY trace_id, span_id"
    )
    # The rows left out: every copy but the first row of its key in the first file that
    # has it.
    con.execute(
        "CREATE TEMP TABLE dropped AS SELECT r.row_id FROM copy_rows r "
        "JOIN (SELECT c.trace_id, c.span_id, min(c.row_id) AS first_row "
        "      FROM copy_rows c JOIN copies k USING (trace_id, span_id, filename) "
        "      GROUP BY ALL) f USING (trace_id, span_id) "
        "WHERE r.row_id <> f.first_row"
    )
    con.execute("DELETE FROM skel WHERE row_id IN (SELECT row_id FROM dropped)")
    differing = con.execute(
        "SELECT trace_id, span_id, variants, filename FROM variants JOIN copies "
        "USING (trace_id, span_id) WHERE variants > 1 "
        f"ORDER BY ALL LIMIT {MAX_NAMED_LINES}"
    ).fetchall()
    duplicates = tuple(
        f"span {t}/{sp} is recorded {n} times with different content; the copy in {f} is used"
        for t, sp, n, f in differing
    )
    return duplicates


def _walk_up(con: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
    """Walk up: `chat_rows` (the chat spans that are not title calls) and `chat_ctx`, each
    one's conversation id and turn span. Returns warnings for walks cut short and for
    conversations named by their trace."""
    # The chat spans whose conversation is wanted, with what their mark keeps: the walk
    # starts from them and the marks are joined to them, not to every span.
    con.execute(
        "CREATE TEMP TABLE chat_rows AS SELECT row_id, trace_id, span_id, up, conv_attr, "
        "start_ns, end_ns, no_messages FROM skel WHERE is_chat AND NOT is_title"
    )
    # Walk up from every chat span: the first conversation id on the way (the span itself
    # included) names the conversation; the first turn span above it holds the record.
    # Each step carries what the span it reached says, so the walk is read once, not
    # joined back to the spans; the chat span's own columns and the turn's record are
    # joined on afterwards by row id. The parent is found by its hashed ids and its trace
    # id, not by the two ids as text (docs/performance-log.md, "the walk up"). The trace
    # id in the join keeps a walk inside its trace
    # whatever the hashes; two span ids of one trace sharing a 64-bit hash (which only
    # that trace's own writer could contrive) would give a span two parents, of which
    # the walk takes the first conversation id and record, never a crash.
    con.execute(
        f"""
        CREATE TEMP TABLE chat_ctx AS
        WITH RECURSIVE walk(row_id, trace_id, up, depth, conv, is_turn, node) AS (
          SELECT row_id, trace_id, up, 0, conv_attr, false, row_id FROM chat_rows
          UNION ALL
          SELECT w.row_id, w.trace_id, s.up, w.depth + 1, s.conv_attr, s.is_turn, s.row_id
          FROM walk w JOIN skel s ON s.k = w.up AND s.trace_id = w.trace_id
          WHERE w.up IS NOT NULL AND w.depth < {MAX_ANCESTORS}
        )
        SELECT row_id,
               arg_min(conv, depth) FILTER (WHERE conv IS NOT NULL) AS conv,
               arg_min(node, depth) FILTER (WHERE is_turn) AS turn_row,
               max(depth) AS reached
        FROM walk GROUP BY row_id
        """
    )
    # A chain of parents deeper than MAX_ANCESTORS (or a cycle) is cut there: the spans
    # above it may hold the conversation id or the record, so the cut is said aloud.
    cut = con.execute(
        f"SELECT trace_id, span_id FROM chat_ctx JOIN chat_rows USING (row_id) "
        f"WHERE reached >= {MAX_ANCESTORS} ORDER BY ALL LIMIT {MAX_NAMED_LINES}"
    ).fetchall()
    deep = tuple(
        f"chat span {t}/{sp}: more than {MAX_ANCESTORS} ancestors (or a cycle); "
        "the walk up for its conversation id and record stopped there"
        for t, sp in cut
    )
    # A conversation named by its trace (no span on the way up names one) is said once:
    # each trace then shows as a conversation of its own, and one a chat recorded over
    # several traces is cut in pieces, silently until now.
    unnamed = con.execute(
        "SELECT count(DISTINCT s.trace_id) FROM chat_ctx c JOIN chat_rows s USING (row_id) "
        "WHERE c.conv IS NULL"
    ).fetchall()[0][0]
    deep += unnamed_note(int(unnamed))
    return deep


def _mark_chat_rows(con: duckdb.DuckDBPyConnection) -> None:
    """Mark chat rows: `turn_records` (each turn's latest provenance span) and
    `chat_marks` (each chat row's conversation and turn record)."""
    # Each turn's latest provenance span (greatest end, then start): walked up from each
    # provenance span to the first turn span above it, at any depth. Few spans: a walk
    # of their own, beside the chat rows' walk.
    con.execute(
        f"""
        CREATE TEMP TABLE turn_records AS
        WITH RECURSIVE walk(row_id, trace_id, up, depth, turn) AS (
          SELECT row_id, trace_id, up, 0, NULL::BIGINT FROM skel WHERE is_prov
          UNION ALL
          SELECT w.row_id, w.trace_id, s.up, w.depth + 1,
                 CASE WHEN s.is_turn THEN s.row_id END
          FROM walk w JOIN skel s ON s.k = w.up AND s.trace_id = w.trace_id
          WHERE w.up IS NOT NULL AND w.turn IS NULL AND w.depth < {MAX_ANCESTORS}
        ),
        owned AS (
          SELECT row_id, arg_min(turn, depth) FILTER (WHERE turn IS NOT NULL) AS turn_row
          FROM walk GROUP BY row_id
        )
        SELECT o.turn_row, arg_max(p.row_id, (p.end_ns, p.start_ns, p.row_id)) AS prov_row
        FROM owned o JOIN skel p ON p.row_id = o.row_id
        WHERE o.turn_row IS NOT NULL GROUP BY o.turn_row
        """
    )
    # Each chat row's conversation and turn record, pointing at its row: in full here
    # (the conversations table below is made of it), and in the index only what an open
    # reads beside the span's own columns (MARK_COLUMNS). Only the conversation id is
    # written onto the spans (for the index that finds them): marking all five columns
    # in place updated most of the spans table's rows (docs/performance-log.md, "marking
    # chat rows").
    con.execute(
        """
        CREATE TEMP TABLE chat_marks AS
        SELECT coalesce(c.conv, s.trace_id) AS conversation_id, c.row_id, s.trace_id,
               s.span_id, s.start_ns, s.end_ns, s.no_messages, t.span_id AS turn_span_id,
               t.row_id IS NOT NULL AS has_turn,
               -- the latest provenance span's record, whole (no tag there: no claim)
               CASE WHEN r.prov_row IS NOT NULL THEN p.tag ELSE t.tag END AS turn_tag,
               CASE WHEN r.prov_row IS NOT NULL THEN p.candidates ELSE t.candidates END
                 AS turn_candidates
        FROM chat_ctx c JOIN chat_rows s USING (row_id)
        LEFT JOIN (SELECT row_id, span_id, tag, candidates FROM skel WHERE is_turn) t
          ON t.row_id = c.turn_row
        LEFT JOIN turn_records r ON r.turn_row = c.turn_row
        LEFT JOIN skel p ON p.row_id = r.prov_row
        """
    )


def _write_index(con: duckdb.DuckDBPyConnection) -> None:
    """Index: the `marks` table, the conversation id on the spans and its index, the
    `chats` view an open reads, and the `conversations` table."""
    # Kept without the columns only the conversations table reads, and the short ids
    # stored plainly: DuckDB's analysis of which compression suits each string column
    # cost more than writing them. The candidate lists keep DuckDB's choice: zstd slowed
    # every open (docs/performance-log.md, "the marks table").
    con.execute(
        "CREATE TABLE marks ("
        + ", ".join(
            f"{name} {kind}" + (f" USING COMPRESSION {how}" if how else "")
            for name, kind, how in MARK_COLUMNS
        )
        + ")"
    )
    con.execute(
        f"INSERT INTO marks SELECT {', '.join(n for n, *_ in MARK_COLUMNS)} FROM chat_marks"
    )
    con.execute(
        "UPDATE spans SET conversation_id = m.conversation_id FROM chat_marks m "
        "WHERE spans.rowid = m.row_id"
    )
    con.execute("CREATE INDEX spans_by_conversation ON spans (conversation_id)")
    con.execute("CREATE INDEX marks_by_conversation ON marks (conversation_id)")
    con.execute(
        """
        CREATE VIEW chats AS
        SELECT m.conversation_id, s.trace_id, s.span_id, coalesce(s.start_ns, 0) AS start_ns,
               coalesce(s.end_ns, s.start_ns, 0) AS end_ns, m.turn_span_id, s.input_messages,
               s.output_messages, s.system_instructions, s.model, s.provider, s.input_tokens,
               s.output_tokens, m.has_turn, m.turn_tag, m.turn_candidates, s.finish_reasons,
               s.status_code, s.status_message, s.error_type
        FROM marks m JOIN spans s ON s.rowid = m.row_id
        """
    )
    con.execute(
        """
        CREATE TABLE conversations AS
        SELECT conversation_id,
               arg_max(end_ns, (end_ns, start_ns)) AS last_active_ns,
               min(start_ns) AS start_ns, count(*) AS chat_spans,
               -- everything a replay of the conversation reads: equal fingerprints in two
               -- indexes mean the same answers (spans are immutable once exported). A
               -- count and a sum of row hashes, which need no order: a digest of the rows
               -- joined in order sorted every conversation's rows. The columns hashed
               -- together, not joined into one text first (nor can 'a|b','c' and
               -- 'a','b|c' collide; docs/performance-log.md, "conversation fingerprints")
               count(*) || '-' || CAST(sum(hash(trace_id, span_id, end_ns, turn_span_id,
                                                turn_tag, turn_candidates))
                                       AS VARCHAR) AS fingerprint
        FROM chat_marks GROUP BY conversation_id
        """
    )


def _counts(con: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """The build's counts, then the temporary tables dropped."""
    counts = con.execute(
        """
        SELECT (SELECT count(*) FROM skel),
               (SELECT count(*) FROM skel WHERE is_chat),
               (SELECT count(*) FROM skel WHERE is_title),
               (SELECT count(*) FROM conversations),
               -- content capture off: chat spans without messages of any convention,
               -- but for one under a call that has them: the same call recorded again
               -- by a second layer (ADK's generate_content under its call_llm), whose
               -- content is there; told it was off, the user looked for a switch
               (SELECT count(*) FROM chat_marks m JOIN skel s ON s.row_id = m.row_id
                WHERE m.no_messages AND s.foreign_call IS NULL
                  AND NOT EXISTS (SELECT 1 FROM skel p
                                  WHERE p.k = s.up AND p.is_chat AND NOT p.no_messages))
        """
    ).fetchall()[0]
    foreign = con.execute(
        "SELECT foreign_call, count(*) FROM skel WHERE foreign_call IS NOT NULL "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    for t in (
        "twice copy_rows copies variants dropped skel chat_rows chat_ctx turn_records chat_marks"
    ).split():
        con.execute(f"DROP TABLE {t}")
    _scanned.discard(con)
    return (*(int(c) for c in counts), tuple((str(n), int(k)) for n, k in foreign))
