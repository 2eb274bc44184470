"""A hostile or broken Connect server gets what a hostile trace file gets (issue #34 §3-4):
bad lines named and the rest read, every response under caps and a deadline, paging that
ends, a saved state that never blocks the next sync, guids that never reach a path, and
a cache only the app's user can read. Each against a stand-in mode (connect_standin.py)."""

from __future__ import annotations

import json
import stat

import pytest

from tests.fixtures import export, span_lines
from tests.sources.conftest import GUID
from tests.sources.connect_standin import ConnectStandIn
from trajectory_review.sources import SourceError, connect_api, connect_lines, trace_files
from trajectory_review.sources.connect import ConnectSource
from trajectory_review.tools.cli import main
from trajectory_review_bench.generate import generate


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[str]:
    root = tmp_path_factory.mktemp("gen")
    generate(root, conversations=12, seed=8)
    return span_lines(root)


@pytest.fixture(autouse=True)
def pages_of_fifty(standin, monkeypatch):
    monkeypatch.setattr(connect_api, "PAGE", 50)  # after the stand-in's own page size


def content_requests(standin: ConnectStandIn) -> list[dict]:
    return [q for p, q in standin.requests if p.endswith(f"{GUID}/traces")]


def test_lines_of_the_wrong_shape_are_named_and_the_rest_is_read_on_every_sync(
    standin, corpus, capsys
):
    bad = [
        '{"resourceSpans": "a string"}',
        '{"resourceSpans": [7]}',
        '{"resourceSpans": [{"scopeSpans": [{"spans": {"not": "a list"}}]}]}',
        '{"resourceSpans": [{"scopeSpans": "nope"}]}',
        "[1, 2]",
        "not json at all",
    ]
    standin.add(GUID, corpus + bad)
    first = export(capsys, f"connect:{GUID}")
    assert first["stats"]["spans"] == len(corpus)
    assert "6 line(s) skipped" in first["stderr"] and "resourceSpans" in first["stderr"]
    again = export(capsys, f"connect:{GUID}")  # the next sync: unaffected
    assert again["stats"]["spans"] == len(corpus)


def test_a_start_time_past_any_clock_neither_fails_nor_sets_the_next_window(
    standin, corpus, capsys
):
    odd = json.loads(corpus[0])
    sp = odd["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    sp.update(spanId="feedfacefeedface", startTimeUnixNano="100000000000000000000000000")
    standin.add(GUID, [*corpus, json.dumps(odd)])
    export(capsys, f"connect:{GUID}")
    standin.requests.clear()
    export(capsys, f"connect:{GUID}")
    (bound,) = {q["from"][0] for q in content_requests(standin)}
    newest = max(connect_lines.line_start(ln.encode()) for ln in corpus)
    assert bound == connect_api.window_param(newest, -3600)  # the real newest, not 1e26


def test_a_state_that_cannot_be_used_is_reset_with_a_warning_not_an_error(standin, corpus, capsys):
    standin.add(GUID, corpus)
    export(capsys, f"connect:{GUID}")
    state = ConnectSource(f"connect:{GUID}").folder / "state.json"
    for broken in (
        {"newest_start_ns": 10**26, "recent": [], "span_ids": [], "segments": 1},
        {"newest_start_ns": "soon", "recent": 5, "span_ids": None, "segments": -1},
        "{not json",
    ):
        state.write_text(broken if isinstance(broken, str) else json.dumps(broken))
        doc = export(capsys, f"connect:{GUID}")
        assert doc["stats"]["spans"] == len(corpus)
        assert "sync state could not be used" in doc["stderr"]


def test_a_total_that_lies_is_never_paged_through(standin, corpus, capsys, monkeypatch):
    standin.add(GUID, corpus)
    standin.hostile.total = str(10**12)
    doc = export(capsys, f"connect:{GUID}")
    assert doc["stats"]["spans"] == len(corpus)
    pages = -(-len(corpus) // connect_api.PAGE)
    # the short last page ends it: at most the pages in flight beyond the data
    assert len(content_requests(standin)) <= pages + connect_api.MAX_PAGES_IN_FLIGHT


def test_pages_that_never_end_stop_when_nothing_new_comes(standin, corpus, capsys):
    standin.add(GUID, corpus)
    standin.hostile.ignore_offset = True
    standin.hostile.total = str(10**9)
    doc = export(capsys, f"connect:{GUID}")
    assert doc["stats"]["spans"] == connect_api.PAGE  # the one page the server knows
    assert len(content_requests(standin)) <= 1 + 2 * connect_api.MAX_PAGES_IN_FLIGHT


def test_the_hard_maximum_of_pages_ends_a_sync_and_says_so(standin, corpus, capsys, monkeypatch):
    standin.add(GUID, corpus)
    monkeypatch.setenv("TRAJECTORY_CONNECT_MAX_PAGES", "2")
    doc = export(capsys, f"connect:{GUID}")
    assert doc["stats"]["spans"] == 2 * connect_api.PAGE
    assert "stopped after 2 pages (TRAJECTORY_CONNECT_MAX_PAGES)" in doc["stderr"]


def test_a_gzip_bomb_is_cut_at_the_decompressed_cap(standin, corpus, capsys, monkeypatch):
    standin.add(GUID, corpus)
    standin.hostile.gzip_bomb = 40 * 1024 * 1024  # ~40 KB on the wire
    monkeypatch.setenv("TRAJECTORY_CONNECT_MAX_DECOMPRESSED_MB", "4")
    assert main(["export", f"connect:{GUID}"]) == 2  # nothing readable came
    err = capsys.readouterr().err
    assert "over 4 MB decompressed (TRAJECTORY_CONNECT_MAX_DECOMPRESSED_MB)" in err


def test_a_response_over_the_received_cap_is_refused_and_the_rest_kept(
    standin, corpus, capsys, monkeypatch
):
    big = json.loads(corpus[0])
    sp = big["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    sp.update(spanId="b16b16b16b16b16b", startTimeUnixNano="1")  # the oldest: the last page
    sp["attributes"] = [{"key": "pad", "value": {"stringValue": "x" * (2 * 1024 * 1024)}}]
    standin.add(GUID, [*corpus, json.dumps(big)])
    monkeypatch.setenv("TRAJECTORY_CONNECT_MAX_RESPONSE_MB", "1")
    doc = export(capsys, f"connect:{GUID}")
    assert "over 1 MB (TRAJECTORY_CONNECT_MAX_RESPONSE_MB)" in doc["stderr"]
    last_page = len(corpus) % connect_api.PAGE  # the lines that shared the big one's page
    assert doc["stats"]["spans"] == len(corpus) - last_page


def test_a_body_that_drips_is_given_up_at_the_deadline(standin, corpus, capsys, monkeypatch):
    standin.add(GUID, corpus[:3])
    standin.hostile.drip_seconds = 0.2
    monkeypatch.setenv("TRAJECTORY_CONNECT_DEADLINE", "1")
    monkeypatch.setattr(connect_api.RetrySettings, "tries", 2)
    assert main(["export", f"connect:{GUID}"]) == 2  # nothing came whole
    err = capsys.readouterr().err
    assert "gave up on the page at offset 0 after 2 tries (no whole answer within 1 s)" in err


@pytest.mark.parametrize(
    "location",
    [
        "connect:../../etc",
        "connect:/etc/passwd",
        f"connect:{GUID}/../x",
        "connect:__api__/v1/users",
        "connect:" + "a" * 5000,
    ],
)
def test_a_guid_that_is_not_one_never_reaches_a_path(standin, capsys, tmp_path, location):
    assert main(["export", location]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a Connect content GUID" in err
    assert standin.requests == []
    assert not (tmp_path / "cache" / "connect").exists() or not any(
        p.name in ("etc", "passwd", "users") for p in (tmp_path / "cache").rglob("*")
    )


def test_the_content_url_from_connects_dashboard_names_its_guid(standin, corpus, capsys):
    standin.add(GUID, corpus)
    for url in (
        f"https://connect.example.com/connect/#/apps/{GUID}/access",
        f"https://connect.example.com/content/{GUID.upper()}/",
    ):
        assert connect_api.content_guid(f"connect:{url}") == GUID
    doc = export(capsys, f"connect:https://connect.example.com/content/{GUID}/")
    assert doc["stats"]["spans"] == len(corpus)
    with pytest.raises(SourceError):
        connect_api.content_guid("connect:https://connect.example.com/other/page")


def test_downloaded_traces_are_private_to_the_apps_user(standin, corpus, capsys, tmp_path):
    standin.add(GUID, corpus)
    export(capsys, f"connect:{GUID}")
    folder = ConnectSource(f"connect:{GUID}").folder
    for path in [folder, folder.parent, *folder.iterdir()]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"
    assert trace_files([f"connect:{GUID}"])


def test_a_content_url_keeps_its_colons_in_trajectory_traces(monkeypatch):
    from trajectory_review.sources import default_sources

    url = f"https://connect.example.com:8443/content/{GUID}/"
    monkeypatch.setenv("TRAJECTORY_TRACES", f"traces:connect:{url}:connect:{GUID}")
    assert default_sources() == ["traces", f"connect:{url}", f"connect:{GUID}"]
