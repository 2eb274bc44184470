"""Building the DuckDB index: the scan of the trace lines (scan.py), then named steps
over its `spans` that drop what is not OTLP, resolve duplicates, walk each chat span up to
its conversation and its turn's record, and write the index's tables, with every line
DuckDB cannot read named by file and line. The steps share their state as DuckDB
temporary tables (each says which it writes and reads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from trajectory_review.index.database import build_ended
from trajectory_review.index.foreign import read_foreign
from trajectory_review.index.lines import MAX_NAMED_LINES, name_bad_lines
from trajectory_review.index.scan import (
    MARK_COLUMNS,
    MAX_ANCESTORS,
    PROVENANCE_SPAN,
    TURN_SPAN,
    drop_not_otlp,
    max_line_bytes,
    scan_lines,
)


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
    con: duckdb.DuckDBPyConnection,
    files: list[str],
    shown: dict[str, str] | None = None,
    in_file: bool = True,
    lookups: bool = True,
) -> IndexStats:
    """Read the trace lines into the index: named steps run in order, which share their
    state as DuckDB temporary tables (each step says which it writes and reads).
    in_file: the index is a database file (scan_lines' `compressed`). lookups: made now,
    or by the index at its first open (make_lookups)."""
    shown = shown or {}
    limit = max_line_bytes()
    lines, bad, rejected = scan_lines(con, files, limit, compressed=in_file)
    file_notes, skipped = drop_not_otlp(con, shown)
    lines, bad = lines - skipped, bad - skipped
    named = name_bad_lines(con, rejected, limit, shown)
    lines += len(rejected)
    bad += len(rejected)
    read_foreign(con)
    _skeleton(con)
    duplicates = _deduplicate(con)
    deep = _walk_up(con)
    _mark_chat_rows(con)
    _write_index(con, lookups)
    counts = _counts(con)
    build_ended(con)
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
    """Walk up: `chat_rows` (the chat spans that are not title calls), `chat_ctx` (each
    one's conversation id and turn span) and `turn_records` (each turn's latest
    provenance span), in one walk. Returns warnings for walks cut short and for
    conversations named by their trace."""
    # The chat spans whose conversation is wanted, with what their mark keeps: the walk
    # starts from them and the marks are joined to them, not to every span.
    con.execute(
        "CREATE TEMP TABLE chat_rows AS SELECT row_id, trace_id, span_id, up, conv_attr, "
        "start_ns, end_ns, no_messages FROM skel WHERE is_chat AND NOT is_title"
    )
    # One walk up from every chat span and every provenance span. A chat span's walk
    # finds the first conversation id on the way (the span itself included), which names
    # the conversation, and the first turn span above it, which holds the record. A
    # provenance span's walk stops at the first turn span above it: the turn it records.
    # Each step of the recursion joins the walkers with every span, so two walks (they
    # were two) joined the spans once per step of each: one walk joins them once per
    # step of the longer.
    # Each step carries what the span it reached says, so the walk is read once, not
    # joined back to the spans; the chat span's own columns and the turn's record are
    # joined on afterwards by row id. The parent is found by its hashed ids and its trace
    # id, not by the two ids as text (docs/performance-log.md, "the walk up"). The trace
    # id in the join keeps a walk inside its trace whatever the hashes; two span ids of
    # one trace sharing a 64-bit hash (which only that trace's own writer could contrive)
    # would give a span two parents, of which the walk takes the first conversation id
    # and record, never a crash.
    con.execute(
        f"""
        CREATE TEMP TABLE walked AS
        WITH RECURSIVE walk(row_id, trace_id, up, depth, conv, is_turn, node, prov) AS (
          SELECT * FROM (
            SELECT row_id, trace_id, up, 0, conv_attr, false, row_id, false FROM chat_rows
            UNION ALL
            SELECT row_id, trace_id, up, 0, NULL, false, row_id, true FROM skel
            WHERE is_prov
          )
          UNION ALL
          SELECT w.row_id, w.trace_id, s.up, w.depth + 1, s.conv_attr, s.is_turn, s.row_id,
                 w.prov
          FROM walk w JOIN skel s ON s.k = w.up AND s.trace_id = w.trace_id
          WHERE w.up IS NOT NULL AND w.depth < {MAX_ANCESTORS} AND NOT (w.prov AND w.is_turn)
        )
        SELECT row_id, prov,
               arg_min(conv, depth) FILTER (WHERE conv IS NOT NULL) AS conv,
               arg_min(node, depth) FILTER (WHERE is_turn) AS turn_row,
               max(depth) AS reached
        FROM walk GROUP BY row_id, prov
        """
    )
    con.execute(
        "CREATE TEMP TABLE chat_ctx AS SELECT row_id, conv, turn_row, reached FROM walked "
        "WHERE NOT prov"
    )
    # Each turn's latest provenance span (greatest end, then start).
    con.execute(
        """
        CREATE TEMP TABLE turn_records AS
        SELECT o.turn_row, arg_max(p.row_id, (p.end_ns, p.start_ns, p.row_id)) AS prov_row
        FROM walked o JOIN skel p ON p.row_id = o.row_id
        WHERE o.prov AND o.turn_row IS NOT NULL GROUP BY o.turn_row
        """
    )
    return _walk_notes(con)


def _walk_notes(con: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
    """What the walk up found wrong: walks cut short, conversations named by a trace."""
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
    """Mark chat rows: `chat_marks` (each chat row's conversation and turn record)."""
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


def _write_index(con: duckdb.DuckDBPyConnection, lookups: bool) -> None:
    """Index: the `marks` table, what opening one conversation reads through
    (make_lookups, unless `lookups` is false), the `chats` view a stream of every
    conversation reads, and the `conversations` table."""
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
    if lookups:
        make_lookups(con, "chat_marks")
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


def make_lookups(con: duckdb.DuckDBPyConnection, marks: str = "marks") -> None:
    """What opening one conversation reads through (TraceIndex.chat_rows): the
    conversation id written onto its chat spans, and an ART index on it there and in
    `marks`; a run that streams every conversation (lint, what-if) reads neither. `marks`:
    where the ids are read from; during the build its temporary `chat_marks`, read faster
    (docs/performance-log.md, "Eleventh session of #50")."""
    con.execute(
        f"UPDATE spans SET conversation_id = m.conversation_id FROM {marks} m "
        "WHERE spans.rowid = m.row_id"
    )
    con.execute("CREATE INDEX spans_by_conversation ON spans (conversation_id)")
    con.execute("CREATE INDEX marks_by_conversation ON marks (conversation_id)")


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
        "twice copy_rows copies variants dropped skel chat_rows walked chat_ctx turn_records "
        "chat_marks"
    ).split():
        con.execute(f"DROP TABLE {t}")
    build_ended(con)
    return (*(int(c) for c in counts), tuple((str(n), int(k)) for n, k in foreign))
