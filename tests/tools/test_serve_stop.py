"""Stopping `serve` while it still reads the traces: Ctrl-C at a terminal, SIGTERM from
Posit Connect or systemd. The server stops at once and says nothing but what it said on
starting: a thread left inside DuckDB aborted the process ("terminate called after
throwing an instance of ''", or dozens of lines of leaked bindings), and a replay cut
short printed warnings that answers "could not be replayed" when nothing was wrong."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

# What serve says on starting (tools/cli.py): nothing else may follow on a clean stop.
STARTING = ("sources: ", "review log: ", "rules: ", "cache: ", "serving on ")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _page(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.read()
    except OSError:
        return b""


@pytest.fixture(scope="module")
def traces_24k() -> Path:
    """24,000 generated conversations. On two cores 8,000 were indexed about 0.3 s after the
    server first answered, and once (CI, stop 58) before it: the indexing moment never came
    and the test waited out its deadline. 24,000 leave it about two seconds."""
    from tests.fixtures import generated

    return generated(24_000, seed=29)


def _serve(traces: Path, port: int, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "TRAJECTORY_CACHE": "off",
        # two worker processes read the rest in, as on any machine with cores to spare
        # (a pool cut off by Python exiting refused the next batch, and said so)
        "TRAJECTORY_WORKERS": "2",
        "TRAJECTORY_REVIEW_LOG": str(tmp_path / "reviews.jsonl"),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "trajectory_review", "serve", str(traces), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
@pytest.mark.parametrize("moment", ["indexing", "reading in"])
def test_a_server_stopped_while_it_reads_the_traces_stops_cleanly(
    traces_24k, tmp_path, sig, moment
):
    # the progress page while the index is built; then the list, while the rest of the
    # conversations are read in and judged (app/page.py)
    wanted = [b"Indexing"] if moment == "indexing" else [b'id="list-rows"', b"data-judging"]
    for _attempt in range(3):
        port = _free_port()
        proc = _serve(traces_24k, port, tmp_path)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + 120
            page = b""
            while not all(w in page for w in wanted):
                assert proc.poll() is None and time.monotonic() < deadline, page[-500:]
                if b'id="list-rows"' in page and (
                    moment == "indexing" or b"data-judging" not in page
                ):
                    break  # done before the server first showed it: that moment passed
                page = _page(url)
                time.sleep(0.02)
            else:
                proc.send_signal(sig)
                _, err = proc.communicate(timeout=30)
                break
        finally:
            _stop(proc)
    else:
        pytest.fail(f"the {moment} moment passed before the server answered, three times")
    said = err.decode(errors="replace").splitlines()
    assert [line for line in said if not line.startswith(STARTING)] == []
    assert proc.returncode in (0, -sig)


def test_serve_refusing_its_options_says_why_at_once_though_its_build_began(traces_8k, tmp_path):
    """serve begins its index build before it checks its options (tools/cli.py): a check
    that fails still says why in one line and ends with the usage error's code, at once,
    without waiting for the build it began."""
    env = {**os.environ, "TRAJECTORY_CACHE": "off",
           "TRAJECTORY_REVIEW_LOG": str(tmp_path / "reviews.jsonl")}  # fmt: skip
    serve = [sys.executable, "-m", "trajectory_review", "serve", str(traces_8k)]
    began = time.monotonic()
    done = subprocess.run(
        [*serve, "--since", "yesterday-ish"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(said) == 1 and said[0].startswith("trajectory-review: --since 'yesterday-ish'")
    # not after the build: the 8,000 conversations take seconds to index
    assert time.monotonic() - began < 10
