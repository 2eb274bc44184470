"""Browser tests: the real app in a subprocess, driven by Playwright on Debian's Chromium."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.browser.scenes import write_scenes
from trajectory_review_bench.generate import generate

# The browser the tests drive, as Playwright chooses for itself when it downloads one:
# Chromium's headless shell for headless runs, the full browser for `--headed` ones.
# Debian packages both. Run headless, the full browser still composites a browser window
# nobody sees; on two cores that made the browser suite the slowest part of `make test`
# (docs/performance-log.md, "Browser tests").
HEADLESS_SHELL = shutil.which("chromium-headless-shell") or "/usr/bin/chromium-headless-shell"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    # `playwright install` cannot download browsers here: use Debian's. CI must fail, not
    # skip, when it is missing.
    headed = browser_type_launch_args.get("headless") is False
    executable = CHROMIUM if headed else HEADLESS_SHELL
    if not Path(executable).exists():
        name = Path(executable).name
        pytest.fail(f"{name} is not installed (make test installs it with apt-get)")
    args = list(browser_type_launch_args.get("args", []))
    args += [
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
    ]
    return {**browser_type_launch_args, "executable_path": executable, "args": args}


@pytest.fixture(autouse=True)
def no_script_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every browser test fails on an uncaught script error in its page: a handler Shiny
    refused (it throws on one that takes no argument) once left the progress page
    waiting for a message it could not handle, with nothing else to say so."""
    if "page" not in request.fixturenames:
        yield
        return
    errors: list[str] = []
    request.getfixturevalue("page").on("pageerror", lambda e: errors.append(str(e)))
    yield
    assert not errors, f"script errors on the page: {errors}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LeakListener:
    """A loopback HTTP server that counts every request made to it."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                listener.paths.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@dataclass
class RunningApp:
    url: str
    traces: Path
    review_log: Path
    port: int
    proc: subprocess.Popen

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def start_app(
    traces: Path | list[str],
    review_log: Path,
    port: int | None = None,
    env: dict[str, str] | None = None,
    wait_judged: bool = True,
    log: Path | None = None,
) -> RunningApp:
    """`serve` on these traces. wait_judged: return once the app is up and the reply rules
    have run over every answer (the page no longer says data-judging), so a test of the
    QA queue never sees it filling in."""
    port = port or free_port()
    env = {
        **os.environ,
        "TRAJECTORY_REVIEW_LOG": str(review_log),
        "SHINYCHAT_ASIDE_FAVICON": "false",
        **(env or {}),
    }
    sources = [str(s) for s in traces] if isinstance(traces, list) else [str(traces)]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trajectory_review.tools.cli",
            "serve",
            *sources,
            "--port",
            str(port),
        ],
        env=env,
        # the server's output in `log` when a test reads it; else a pipe nobody reads
        stdout=open(log, "wb") if log is not None else subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            said = log.read_text() if log is not None else proc.stdout.read().decode()
            raise RuntimeError("app exited: " + said[-2000:])
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        raise RuntimeError("app did not start in time")
    url = f"http://127.0.0.1:{port}/"
    while wait_judged and time.time() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                html = resp.read()
        except OSError:
            html = b""
        if b'id="list-rows"' in html and b"data-judging" not in html:
            break
        if b"tr-loading-failed" in html or b"No traces" in html:
            break  # the app says what is wrong: the test looks at that
        time.sleep(0.2)
    return RunningApp(url, traces, review_log, port, proc)


@pytest.fixture(scope="session")
def leak() -> LeakListener:
    listener = LeakListener()
    yield listener
    listener.server.shutdown()


@pytest.fixture(scope="session")
def traces_dir(tmp_path_factory, leak) -> Path:
    root = tmp_path_factory.mktemp("traces")
    generate(root / "generated", conversations=40, seed=11)
    write_scenes(root / "scenes.jsonl", leak.port)
    return root


@pytest.fixture(scope="session")
def app_server(traces_dir, tmp_path_factory) -> Iterator[RunningApp]:
    log = tmp_path_factory.mktemp("reviews") / "reviews.jsonl"
    app = start_app(traces_dir, log)
    yield app
    app.stop()


@pytest.fixture(scope="module")
def behind_a_proxy(traces_dir, tmp_path_factory) -> Iterator[RunningApp]:
    """The app as Connect or Shiny Server runs it: a trusted proxy names each reviewer,
    and "lea" leads. One per test module, each with its own review log."""
    root = tmp_path_factory.mktemp("proxied")
    env = {"TRAJECTORY_TRUSTED_PROXY": "1", "TRAJECTORY_LEADS": "lea"}
    app = start_app(traces_dir, root / "reviews.jsonl", env=env)
    yield app
    app.stop()


@pytest.fixture
def open_app(page, app_server):
    """Open the app at a query string and wait for the list and transcript."""

    def _open(query: str = "", wait_transcript: bool = True):
        page.goto(app_server.url + query)
        page.wait_for_selector(".tr-list-summary", timeout=30_000)
        if wait_transcript:
            page.wait_for_selector(".tr-conversation", timeout=30_000)
        return page

    return _open


def open_filters(page) -> None:
    """Unfold the sidebar's filters (folded by default, so the list gets the height), and
    wait until the fold has finished sliding open. A check inside it once failed as "the
    click did not change its state" (one run in many, never reproduced): a target still
    moving under the click is the likeliest cause, and the only one a test can remove."""
    from playwright.sync_api import expect

    button = page.locator(".tr-filters .accordion-button")
    if "collapsed" in (button.get_attribute("class") or ""):
        button.click()
    # Bootstrap's collapse: "collapsing" while it slides, "collapse show" once open
    expect(page.locator(".tr-filters .accordion-collapse")).to_have_class(
        re.compile(r"(^|\s)show(\s|$)")
    )
    page.locator("#list-rejected").wait_for(state="visible")


def add_note(page, text: str) -> None:
    """A note written in the review pane, and seen there."""
    from playwright.sync_api import expect
    from shiny.playwright import controller

    note = controller.InputSubmitTextarea(page, "review-note")
    note.set(text)
    note.submit()
    expect(page.locator(".tr-notes")).to_contain_text(text)


def settled(page) -> None:
    """Every image in the page has loaded or failed, two frames on: a request any of them
    made has reached its server. What a negative check waits for instead of a sleep."""
    page.evaluate(
        "() => Promise.all(Array.from(document.images, (i) => i.decode().catch(() => null)))"
        ".then(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))))"
    )


def send_input(page, name: str, value: object, *, event: bool = False) -> None:
    """Send an input value as a crafted client would, once Shiny has connected. Right after
    `goto`, `Shiny.setInputValue` is not yet defined (it is set when the client
    initialises): a test that sent at once failed with "is not a function" on a slow run."""
    page.wait_for_function(
        "() => window.Shiny && Shiny.shinyapp && Shiny.shinyapp.isConnected()", timeout=30_000
    )
    page.evaluate(
        "([n, v, e]) => Shiny.setInputValue(n, v, e ? {priority: 'event'} : undefined)",
        [name, value, event],
    )
