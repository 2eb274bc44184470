"""Reviews in PostgreSQL (issue #45), on a real server the tests start on loopback: the
same events as the file, append-only by the database's grants, every process seeing
every event, an outage survived without loss, and no password ever printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.fixtures import A, Q, Recorder
from trajectory_review.reviews.log import ReviewEvent, ReviewLog, ReviewLogError
from trajectory_review.reviews.postgres import TABLE
from trajectory_review.reviews.store import open_store

PASSWORD = "p@ss/w:rd#?%x"  # every character a URL means something by
CLI = [sys.executable, "-m", "trajectory_review.tools.cli"]


def _events() -> list[ReviewEvent]:
    return [
        ReviewEvent("note", "c1", "ann", 1, "canopy looks off", identity="declared"),
        ReviewEvent("flag", "c1", "ann", 1, identity="declared"),
        ReviewEvent(
            "verdict", "c1", "bo", 1, "", "no-banned-phrases", "correct", identity="authenticated"
        ),  # fmt: skip
        ReviewEvent(
            "sample",
            "*",
            "bo",
            sample="s1",
            members=(("c1", 1, "all"),),
            spec={"kind": "flagged", "size": 1},
            identity="authenticated",
        ),  # fmt: skip
    ]


def _role(pg, url: str, name: str, grants: str) -> str:
    """A login role on the database of `url` with only `grants` on the events table."""
    db = url.rsplit("/", 1)[1]
    pg.admin(f"CREATE ROLE {name} LOGIN PASSWORD '{PASSWORD.replace(chr(39), chr(39) * 2)}'")
    pg.admin(f"GRANT CONNECT ON DATABASE {db} TO {name}", db=db)
    if grants:
        pg.admin(f"GRANT {grants} ON {TABLE} TO {name}", db=db)
    return pg.url(user=name, password=PASSWORD, db=db)


def test_events_read_back_from_postgres_as_from_a_file(pg_url, tmp_path):
    store, log, events = open_store(pg_url), ReviewLog(tmp_path / "r.jsonl"), _events()
    for e in events:
        store.append(e)
        log.append(e)
    again = open_store(pg_url).state()  # another process, started after
    assert again.events == log.state().events and again.error is None
    store.append(events[0])  # an event there already (by id) adds nothing
    assert len(open_store(pg_url).state().events) == 4


def test_a_role_with_only_select_and_insert_reviews_and_cannot_rewrite_history(pg, pg_url):
    open_store(pg_url).append(_events()[0])  # the table, made by a role that may
    qa = open_store(_role(pg, pg_url, "qa_rw", "SELECT, INSERT"))
    qa.append(_events()[1])
    assert [e.type for e in qa.state().events] == ["note", "flag"]
    with psycopg.connect(qa.url, autocommit=True) as conn:  # append-only, by the database
        for sql in (f"DELETE FROM {TABLE}", f"UPDATE {TABLE} SET event = ''",
                    f"TRUNCATE {TABLE}"):  # fmt: skip
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)


def test_a_missing_table_a_role_may_not_create_is_one_line(pg, pg_url):
    db = pg_url.rsplit("/", 1)[1]
    pg.admin("REVOKE CREATE ON SCHEMA public FROM PUBLIC", db=db)
    store = open_store(_role(pg, pg_url, "qa_nocreate", ""))
    with pytest.raises(ReviewLogError) as exc:
        store.append(_events()[0])
    said = str(exc.value)
    assert "\n" not in said and f"the table {TABLE} does not exist" in said
    assert "docs/connect.md" in said and PASSWORD not in said


def test_eight_writers_and_a_reader_lose_nothing_and_repeat_nothing(pg_url):
    writer = (
        "import sys; from trajectory_review.reviews.store import open_store;"
        "from trajectory_review.reviews.log import ReviewEvent;"
        "s = open_store(sys.argv[1]);"
        "[s.append(ReviewEvent('note', 'c', f'w{sys.argv[2]}', 1, f'{sys.argv[2]}-{i}')) "
        "for i in range(500)]"
    )
    reader = open_store(pg_url)
    seen: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.append(len(reader.state().events))
            reader.signature()  # the poller reads on its own thread meanwhile
            time.sleep(0.05)

    t = threading.Thread(target=read)
    t.start()
    procs = [subprocess.Popen([sys.executable, "-c", writer, pg_url, str(n)]) for n in range(8)]
    assert all(p.wait(120) == 0 for p in procs)
    deadline = time.monotonic() + 10
    while len(reader.state().events) < 4000 and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    t.join()
    texts = [e.text for e in reader.state().events]
    assert len(texts) == len(set(texts)) == 4000
    assert seen == sorted(seen)  # the reader only ever saw more


def test_the_database_away_and_back_loses_nothing_and_needs_no_restart(pg, pg_url):
    store = open_store(pg_url)
    store.append(_events()[0])
    pg.stop()
    try:
        with pytest.raises(ReviewLogError) as exc:
            store.append(_events()[1])
        said = str(exc.value)
        assert said.startswith("review store postgresql://tr_admin@127.0.0.1:")
        assert "cannot be saved" in said and "\n" not in said and "admin-pw" not in said
        assert store.state().error and len(store.state().events) == 1  # what was read stays
    finally:
        pg.start()
    store.append(_events()[1])  # the same store object: no restart
    assert [e.type for e in store.state().events] == ["note", "flag"]
    assert store.writable_problem() is None


def test_a_note_in_one_process_reaches_another_within_two_seconds(pg_url):
    watcher = open_store(pg_url)
    first = watcher.signature()
    subprocess.run(
        [sys.executable, "-c",
         "import sys; from trajectory_review.reviews.store import open_store;"
         "from trajectory_review.reviews.log import ReviewEvent;"
         "open_store(sys.argv[1]).append(ReviewEvent('note', 'c', 'bo', 1, 'from afar'))",
         pg_url], check=True,
    )  # fmt: skip
    began = time.monotonic()
    while watcher.signature() == first and time.monotonic() - began < 2.0:
        time.sleep(0.05)
    assert watcher.signature() != first
    assert [e.text for e in watcher.state().events] == ["from afar"]


def _reviewed_traces(tmp_path: Path) -> Path:
    r = Recorder()
    r.turn("c1", [Q("How many plots?"), A("There are 12 plots in the stand inventory.")],
           tag="C")  # fmt: skip
    (tmp_path / "traces").mkdir()
    return r.write(tmp_path / "traces" / "t.jsonl")


def _cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, **(env or {})})  # fmt: skip


def test_reviews_copy_both_ways_keeps_every_event_once_and_exports_the_same(pg, pg_url, tmp_path):
    traces = _reviewed_traces(tmp_path)
    log = ReviewLog(tmp_path / "team.jsonl")
    for e in _events():
        log.append(e)
    target = _role(pg, pg_url, "qa_copy", "")
    open_store(pg_url).state()  # the table exists; the copying role may only read and add
    pg.admin(f"GRANT SELECT, INSERT ON {TABLE} TO qa_copy", db=pg_url.rsplit("/", 1)[1])
    for _ in range(2):
        done = _cli("reviews", "copy", str(log.path), target, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert PASSWORD not in done.stderr and "qa_copy@127.0.0.1" in done.stderr
    assert "copied 0 review event(s)" in done.stderr and "4 already there" in done.stderr
    back = tmp_path / "back.jsonl"
    assert _cli("reviews", "copy", target, str(back), cwd=tmp_path).returncode == 0
    assert [json.loads(x) for x in back.read_text().splitlines()] == [
        json.loads(x) for x in log.path.read_text().splitlines()
    ]  # ids, authors, times: as they were
    exports = [
        _cli("export", str(traces), "--reviewed", "--review-log", where, cwd=tmp_path).stdout
        for where in (str(log.path), target)
    ]
    assert exports[0] == exports[1] and exports[0].strip()


@pytest.mark.parametrize(
    "location",
    [
        f"postgresql://qa:{PASSWORD}@127.0.0.1:1/reviews",  # unencoded: libpq cannot read it
        "postgresql://qa:s3cret-pw@127.0.0.1:1/reviews",  # nobody listens there
        "mysql://qa:s3cret-pw@db/reviews",
    ],
)
def test_a_store_that_cannot_be_used_is_one_line_and_never_a_folder(tmp_path, location):
    traces = _reviewed_traces(tmp_path)
    for how in (["--review-log", location], []):
        done = _cli("export", str(traces), "--reviewed", *how, cwd=tmp_path,
                    env={"TRAJECTORY_REVIEW_LOG": location})  # fmt: skip
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "s3cret" not in done.stderr and "p@ss" not in done.stderr
        assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]  # no folder from a URL


def test_serve_with_a_source_that_cannot_be_parsed_stops_before_naming_a_log(tmp_path):
    done = _cli("serve", "connect:../../x", "--port", "1", cwd=tmp_path,
                env={"TRAJECTORY_REVIEW_LOG": ""})  # fmt: skip
    assert done.returncode == 2 and "not a Connect content GUID" in done.stderr
    assert "review log" not in done.stderr and list(tmp_path.iterdir()) == []


def test_on_connect_a_review_file_in_the_bundle_is_said_to_be_lost_at_the_next_deploy(tmp_path):
    """serve says so in its log, and the page in a lasting line."""
    import socket
    import urllib.request

    traces = _reviewed_traces(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "CONNECT_CONTENT_GUID": "3f1c9a52-5d7e-4b8a-9c2e-1a2b3c4d5e6f",
           "TRAJECTORY_REVIEW_LOG": ""}  # fmt: skip
    proc = subprocess.Popen([*CLI, "serve", str(traces), "--port", str(port)], cwd=tmp_path,
                            env=env, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline, page = time.monotonic() + 60, ""
        while time.monotonic() < deadline and "tr-header" not in page:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    page = r.read().decode()
            except OSError:
                time.sleep(0.3)
        assert "lost at the next deploy" in page and "tr-store-notice" in page
    finally:
        proc.terminate()
        said = proc.communicate(timeout=30)[1]
    assert "warning: Reviews are kept inside this deployment" in said


def test_libpq_parameters_and_pg_variables_are_honoured(pg, pg_url, monkeypatch):
    """A URL without its password takes PGPASSWORD, as psql would; `sslmode=require`
    asks for TLS, which this loopback server does not offer: refused, not ignored."""
    bare = pg_url.replace(":admin-pw@", "@")
    monkeypatch.setenv("PGPASSWORD", "admin-pw")
    store = open_store(bare)
    store.append(_events()[0])
    assert len(store.state().events) == 1 and store.shown.startswith("postgresql://tr_admin@")
    tls = open_store(pg_url + "?sslmode=require")
    with pytest.raises(ReviewLogError, match="SSL"):
        tls.append(_events()[1])
