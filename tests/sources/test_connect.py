"""The `connect:` source against a stand-in for Connect's traces API
(tests/sources/connect_standin.py).

Each rule of the source (issue #9 §1) has a test here; the note that closed the issue
names the mutation each one kills."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import time
from importlib import import_module

import pytest

from tests.fixtures import export, span_lines
from tests.sources.conftest import GUID, OTHER
from trajectory_review.sources import (
    SourceError,
    connect,
    connect_api,
    connect_lines,
    sync_sources,
    trace_files,
)
from trajectory_review.sources.connect import ConnectSource
from trajectory_review.tools.cli import main
from trajectory_review_bench.generate import generate

STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[str]:
    root = tmp_path_factory.mktemp("gen")
    generate(root, conversations=30, seed=5)
    return span_lines(root)


def conversation_ids(doc: dict) -> set[str]:
    return {c["id"] for c in doc["conversations"]}


def test_missing_server_or_key_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.delenv("CONNECT_SERVER", raising=False)
    monkeypatch.setenv("CONNECT_API_KEY", "k")
    assert main(["export", f"connect:{GUID}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "CONNECT_SERVER" in err and GUID in err


def test_the_server_url_is_normalised(monkeypatch):
    monkeypatch.setenv("CONNECT_API_KEY", "k")
    want = f"https://c.example.com/__api__/v1/content/{GUID}/traces"
    for given in (
        "https://c.example.com/",
        "https://c.example.com/__api__",
        "https://c.example.com/__api__/",
    ):
        monkeypatch.setenv("CONNECT_SERVER", given)
        assert connect_api.Client.from_env(GUID).url("content", GUID, "traces") == want


def test_every_page_is_read_with_the_key_and_the_total_header(standin, corpus, capsys):
    standin.add(GUID, corpus)
    doc = export(capsys, f"connect:{GUID}")
    assert doc["stats"]["spans"] == len(corpus)
    pages = [q for p, q in standin.requests if p.endswith(f"{GUID}/traces")]
    assert len(pages) == -(-len(corpus) // 100)
    assert sorted(int(q["offset"][0]) for q in pages) == list(range(0, len(corpus), 100))
    # the first read asks for everything up to now (+1 s), in the one format Connect reads
    assert all("from" not in q and STAMP.match(q["to"][0]) for q in pages)


def test_a_restart_downloads_nothing_old_and_a_refresh_asks_only_for_newer_spans(
    standin, corpus, capsys
):
    by_start = sorted(corpus, key=lambda ln: connect_lines.line_start(ln.encode()))
    old, new = by_start[:-40], by_start[-40:]  # the newest 40 spans arrive later
    standin.add(GUID, old)
    first = export(capsys, f"connect:{GUID}")
    standin.requests.clear()
    again = export(capsys, f"connect:{GUID}")
    assert again["stats"]["spans"] == first["stats"]["spans"]
    asked = [q for p, q in standin.requests if p.endswith(f"{GUID}/traces")]
    assert asked and all(STAMP.match(q["from"][0]) for q in asked)
    newest = max(connect_lines.line_start(ln.encode()) for ln in old)
    expected = connect_api.window_param(newest, -3600)  # padded an hour back
    assert {q["from"][0] for q in asked} == {expected}
    folder = ConnectSource(f"connect:{GUID}").folder
    assert len(list(folder.glob("segment-*"))) == 1  # nothing new, nothing written
    standin.add(GUID, new)
    grown = export(capsys, f"connect:{GUID}")
    assert grown["stats"]["spans"] == len(corpus)  # each span once, though windows overlap


def test_a_parent_missing_because_of_the_window_is_fetched_again_without_it(
    standin, corpus, capsys
):
    standin.add(GUID, corpus)
    export(capsys, f"connect:{GUID}")
    # a long-lived wrapper span that started long ago and ended (was exported) only now,
    # with a new child: the `from` window cannot return the parent
    parent = json.loads(corpus[0])
    sp = parent["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    sp.update(spanId="abcdefabcdef0001", parentSpanId="", startTimeUnixNano="1000000000000000000")
    child = json.loads(corpus[1])
    cp = child["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    now = time.time_ns()
    cp.update(
        spanId="abcdefabcdef0002",
        parentSpanId="abcdefabcdef0001",
        startTimeUnixNano=str(now - 10**9),
        endTimeUnixNano=str(now),
    )
    standin.add(GUID, [json.dumps(parent), json.dumps(child)])
    standin.requests.clear()
    export(capsys, f"connect:{GUID}")
    asked = [q for p, q in standin.requests if p.endswith(f"{GUID}/traces")]
    assert any("from" in q for q in asked) and any("from" not in q for q in asked)
    files = trace_files([f"connect:{GUID}"])
    text = b"".join(gzip.open(f).read() for f in files)
    assert b"abcdefabcdef0001" in text and text.count(b"abcdefabcdef0002") == 1


def test_an_older_server_is_read_through_its_jobs(standin, corpus, capsys):
    standin.version = "2026.05.1"
    half = len(corpus) // 2
    standin.add(GUID, corpus[:half], job="job-a")
    standin.add(GUID, corpus[half:], job="job-b")
    doc = export(capsys, f"connect:{GUID}")
    assert doc["stats"]["spans"] == len(corpus)
    paths = {p for p, _ in standin.requests}
    assert f"/__api__/v1/content/{GUID}/jobs" in paths
    assert f"/__api__/v1/content/{GUID}/jobs/job-a/traces" in paths


def test_a_newer_server_is_read_from_both_stores_each_span_once(standin, corpus, capsys):
    half = len(corpus) // 2
    standin.add(GUID, corpus[: half + 10])
    standin.add(GUID, corpus[half:], job="old-job")  # 10 spans in both stores
    doc = export(capsys, f"connect:{GUID}")
    assert doc["stats"]["spans"] == len(corpus)


def test_several_contents_and_files_mix_in_one_source_list(standin, corpus, capsys, tmp_path):
    standin.add(GUID, corpus[: len(corpus) // 2])
    standin.add(OTHER, corpus[len(corpus) // 2 :])
    generate(tmp_path / "files", conversations=3, seed=99)
    doc = export(capsys, f"connect:{GUID}", f"connect:{OTHER}", str(tmp_path / "files"))
    assert len(doc["conversations"]) >= 30 + 3 - 2  # (a conversation may straddle halves)


@pytest.mark.parametrize("problem", ["wrong key", "not a collaborator"])
def test_refused_access_is_one_line_naming_the_content(
    standin, corpus, capsys, monkeypatch, problem
):
    standin.add(GUID, corpus)
    if problem == "wrong key":
        monkeypatch.setenv("CONNECT_API_KEY", "wrong")
    else:
        standin.contents[GUID].forbidden = True
    assert main(["export", f"connect:{GUID}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and GUID in err and "collaborator (owner) access" in err


def test_a_flaky_page_is_retried_and_a_dead_one_is_a_warning(standin, corpus, capsys):
    standin.add(GUID, corpus)
    path = f"/__api__/v1/content/{GUID}/traces"
    standin.flaky[(path, 100)] = 2  # fails twice, then answers
    doc = export(capsys, f"connect:{GUID}")
    assert doc["stats"]["spans"] == len(corpus) and "gave up" not in doc["stderr"]

    standin.contents.clear()
    standin.add(OTHER, corpus)
    standin.always_failing.add((f"/__api__/v1/content/{OTHER}/traces", 200))
    doc = export(capsys, f"connect:{OTHER}")
    lost = min(100, len(corpus) - 200)  # the page at offset 200
    assert doc["stats"]["spans"] == len(corpus) - lost  # the rest was kept
    assert f"connect:{OTHER}: gave up on the page at offset 200" in doc["stderr"]


def test_the_standin_ignores_a_bound_in_any_other_format(standin, corpus):
    import httpx

    standin.add(GUID, corpus)
    url = f"{standin.url}/__api__/v1/content/{GUID}/traces"
    headers = {"Authorization": f"Key {standin.key}"}
    full = httpx.get(url, params={"limit": 5}, headers=headers)
    odd = httpx.get(url, params={"limit": 5, "from": "2099-01-01 00:00:00"}, headers=headers)
    assert odd.headers["X-Total-Count"] == full.headers["X-Total-Count"] == str(len(corpus))
    late = httpx.get(url, params={"limit": 5, "from": "2099-01-01T00:00:00Z"}, headers=headers)
    assert late.headers["X-Total-Count"] == "0"
    starts = [connect_lines.line_start(ln) for ln in full.content.splitlines()]
    assert starts == sorted(starts, reverse=True)  # newest first


def test_sync_sources_reports_progress_as_spans_read(standin, corpus):
    standin.add(GUID, corpus)
    seen: list[tuple[int, int]] = []
    sync_sources([f"connect:{GUID}"], progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (len(corpus), len(corpus))
    with pytest.raises(SourceError):
        trace_files([f"connect:{OTHER}"])  # never synced: said, not an empty list


def test_connect_sources_mix_with_paths_in_trajectory_traces(monkeypatch):
    from trajectory_review.sources import default_sources

    monkeypatch.setenv("TRAJECTORY_TRACES", f"/data/a:connect:{GUID}:traces:connect:{OTHER}")
    assert default_sources() == ["/data/a", f"connect:{GUID}", "traces", f"connect:{OTHER}"]


def test_each_kind_of_source_is_one_class_behind_the_protocol(tmp_path):
    from trajectory_review.sources import KINDS, open_source
    from trajectory_review.sources.clickhouse import ClickHouseSource
    from trajectory_review.sources.files import FileSource

    assert isinstance(open_source(f"connect:{GUID}"), connect.ConnectSource)
    assert isinstance(open_source(tmp_path), FileSource)
    assert isinstance(open_source("chdb:///data/ch"), ClickHouseSource)
    locations = (f"connect:{GUID}", str(tmp_path), "chdb:///data/ch")
    for takes, module, name in KINDS:
        kind = getattr(import_module(module), name)
        taken = [loc for loc in locations if takes(loc)]
        assert len(taken) == 1  # each location is one kind's, told from its text alone
        assert all(kind.open(loc) is None for loc in locations if loc not in taken)
        source = kind.open(taken[0])
        assert callable(source.sync) and callable(source.files) and source.location


def test_naming_trace_files_imports_no_other_kind_of_source(tmp_path):
    """The command line names its sources before `serve` and `lint` start their index
    build: a folder of files must not import ClickHouse's or Connect's module first."""
    code = (
        "import sys\n"
        "from trajectory_review.sources import open_source, trace_files\n"
        f"open_source({str(tmp_path)!r})\n"
        "import trajectory_review.model.startup\n"
        "kinds = ('trajectory_review.sources.clickhouse', 'trajectory_review.sources.connect')\n"
        "print(sorted(m for m in kinds if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_traces_downloaded_with_the_cache_off_go_when_the_process_ends(standin, corpus, tmp_path):
    # with no cache, a content's traces are mirrored in a folder of the process's own;
    # every run left one behind in the temporary folder, the traces in it. Removed as the
    # process ends, or by the next run when it was killed
    import os
    import subprocess
    import sys

    standin.add(GUID, corpus)
    temp = tmp_path / "tmp"
    temp.mkdir()
    # what a process killed outright left (no such pid): the next run removes it
    (temp / "trajectory-review-999999999-connect-old" / "connect").mkdir(parents=True)
    env = {**os.environ, "TRAJECTORY_CACHE": "off", "TMPDIR": str(temp)}
    for command in (["lint", "--json", "--fail-on", "never"], ["export", "--format", "csv"]):
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "trajectory_review",
                command[0],
                f"connect:{GUID}",
                *command[1:],
            ],
            capture_output=True,
            env=env,
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip()
        assert list(temp.iterdir()) == [], command


def test_traces_a_killed_process_downloaded_go_with_the_next_run(standin, corpus, tmp_path):
    # a process killed outright never cleans up: its folder is named by its pid, and the
    # next process to make one of its own removes it
    import os
    import signal
    import socket
    import subprocess
    import sys

    standin.add(GUID, corpus)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TRAJECTORY_CACHE": "off", "TMPDIR": str(temp)}
    env["TRAJECTORY_REVIEW_LOG"] = str(tmp_path / "reviews.jsonl")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    source = f"connect:{GUID}"
    server = subprocess.Popen(
        [sys.executable, "-m", "trajectory_review", "serve", source, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        mine = f"trajectory-review-{server.pid}-connect-"
        while not any(p.name.startswith(mine) and any(p.rglob("*.gz")) for p in temp.iterdir()):
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.05)
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    assert any(p.name.startswith(mine) for p in temp.iterdir())  # left behind
    run = subprocess.run(
        [sys.executable, "-m", "trajectory_review", "export", source],
        capture_output=True,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    assert list(temp.iterdir()) == []
