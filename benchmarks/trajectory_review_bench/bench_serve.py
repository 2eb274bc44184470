"""Benchmarks of the served app and the CLI end to end, each against DuckDB's raw
`count(*)` scan of the same files measured in the same run (bench.py's baseline).

- ready_vs_raw_scan: from `serve` starting with no cache until the app page (not the
  progress page) answers, with its list and filter counts in it.
- lint_vs_raw_scan: `lint --json` end to end, no cache: every answer replayed and judged.
- reviewers: eight browser sessions on one server, each opening conversations, filtering
  and paging; click-to-transcript and filter/page times (p95) and the server's memory
  growth per extra session. Figures, never a timed test.
- browser_list_seconds (detail): a browser opened on the app as `serve` starts, until
  the list is on its screen (the progress page opens the app by itself).

Long on purpose: the served app's benchmark steps (a browser, reviewers over websockets).
"""

from __future__ import annotations

import html as html_lib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from trajectory_review.app.ids import NAV_INPUTS, TRANSCRIPT_OUTPUT

# The page the app serves once its data is ready carries the list; the progress page
# does not (app/page.py).
READY_MARK = b'id="list-rows"'
JUDGED_POLL = 0.25  # seconds between asks for the app page while it is judged


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(cache: str) -> dict[str, str]:
    # no progress bar on stdout, no cache unless asked, no watcher noise
    return {**os.environ, "TRAJECTORY_CACHE": cache, "TRAJECTORY_WATCH_SECONDS": "0"}


class Server:
    """`trajectory-review serve` in a child process, on a free port."""

    def __init__(self, src: Path, cache: str = "off", reviews: Path | None = None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self._tmp = tempfile.TemporaryDirectory()
        env = _env(cache)
        env["TRAJECTORY_REVIEW_LOG"] = str(reviews or Path(self._tmp.name) / "reviews.jsonl")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trajectory_review", "serve", str(src),
             "--port", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def wait_listening(self) -> None:
        """Until the server answers at all (with its progress page, at first)."""
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=30):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("serve exited before it was ready") from None
                time.sleep(0.02)

    def wait_ready(self, timeout: float = 3600, judged: bool = False) -> float:
        """Seconds from the start until the app page (not the progress page) is served;
        judged: until the reply rules have run over every answer too (the page no longer
        says data-judging)."""
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("serve exited before it was ready")
            try:
                with urllib.request.urlopen(self.url, timeout=30) as resp:
                    page = resp.read()
                    if READY_MARK in page and not (judged and b"data-judging" in page):
                        return time.perf_counter() - self.started
            except OSError:
                pass
            # Waiting for the rules, the app page is drawn each time (~50 ms of the
            # server's time), where a reviewer's page is drawn once: asked for every
            # 0.05 s, it took the server's time from the workers judging behind it
            # (every answer judged at a median 4.11 s, against 3.92 s asked for every
            # 0.25 s, four alternate runs at 5,000 conversations).
            time.sleep(JUDGED_POLL if judged else 0.05)
        raise TimeoutError("serve was not ready in time")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._tmp.cleanup()


def bench_ready(src: Path) -> tuple[float, float]:
    """Seconds until the list is up, and until every answer is judged (one run; the
    ratio to the raw scan is bench.bench_start's, over several)."""
    server = Server(src)
    try:
        seconds = server.wait_ready()
        judged = server.wait_ready(judged=True)  # and every answer judged (detail)
    finally:
        server.stop()
    return seconds, judged


def bench_browser_ready(src: Path) -> dict:
    """What a reviewer who opens the app as it starts waits for: with Chromium already
    running, `serve` starts and the page is opened as soon as it listens (the progress
    page); the time until the list is on the screen is taken beside the time the server
    first answered with it (HTTP, as ready_seconds). Detail, not a goal: the browser
    takes a core from the server here, as a reviewer's own machine would not, and its
    first load of the app's scripts is part of the wait."""
    import threading

    from playwright.sync_api import sync_playwright

    served: list[float | None] = []
    with sync_playwright() as p:
        browser = _chromium(p)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        server = Server(src)
        try:
            server.wait_listening()  # the first page is the progress page
            waiter = threading.Thread(target=lambda: served.append(_ready_or_none(server)))
            waiter.start()
            page.goto(server.url)
            page.wait_for_selector("#list-rows", state="attached", timeout=600_000)
            shown = time.perf_counter() - server.started
            waiter.join()
        finally:
            server.stop()
            browser.close()
    if not served or served[0] is None:
        raise RuntimeError("serve was never seen ready over HTTP")
    return {"browser_list_seconds": shown, "browser_after_ready_seconds": shown - served[0]}


def _ready_or_none(server: Server) -> float | None:
    """wait_ready on a thread: its failure said by the caller, not lost in the thread."""
    try:
        return server.wait_ready()
    except (RuntimeError, TimeoutError):
        return None


def bench_lint(src: Path) -> float:
    """Seconds of `lint --json` end to end, no cache (one run, as bench_ready)."""
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "trajectory_review", "lint", str(src), "--json",
         "--fail-on", "never"],
        env=_env("off"),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return time.perf_counter() - t


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


# A reviewer reads between clicks: each client waits this long (uniformly, seconds)
# before its next action. With no wait at all, eight clients hammering a 2-core machine
# measure the queue, not a reviewer's experience (bench_serve.py, think=(0, 0)).
THINK = (0.5, 1.5)


def bench_reviewers(
    src: Path, sessions: int = 8, rounds: int = 8, think: tuple[float, float] = THINK
) -> dict:
    """Reviewers working at once on one server (the corpus' index and catalog built first,
    into a cache of the bench's own).

    One real browser session opens the app and its first message to the server (the
    inputs Shiny's client sends) is kept; then `sessions` websocket clients speak Shiny's
    protocol with it, concurrently, each opening conversations, paging and filtering in
    its own loop. Clients rather than eight browsers: on a 2-core machine eight Chromium
    renderers take the CPU from the server being measured."""
    import asyncio

    cache = tempfile.mkdtemp(prefix="trajectory-review-bench-cache-")
    server = Server(src, cache=cache)
    try:
        server.wait_ready(judged=True)  # reviewers on a settled server, rules all in
        init = _browser_init(server)
        opens, lists, rss = asyncio.run(_reviewers(server, init, sessions, rounds, think))
    finally:
        server.stop()
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "reviewers_sessions": sessions,
        "reviewers_open_p95_ms": _p95(opens) * 1000,
        "reviewers_list_p95_ms": _p95(lists) * 1000,
        # the first session's growth is the app's own warm-up; the rest are extra
        # sessions, at the server's peak (RSS also falls as Python frees memory)
        "reviewers_rss_growth_mb_per_session": max(0.0, max(rss[1:]) - rss[1])
        / max(1, sessions - 1),
    }


def _browser_init(server: Server) -> str:
    """The init message a real browser sends when it opens the answers list."""
    from playwright.sync_api import sync_playwright

    sent: list[str] = []
    with sync_playwright() as p:
        browser = _chromium(p)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.on("websocket", lambda ws: ws.on("framesent", lambda f: sent.append(str(f))))
        page.goto(server.url + "?view=answers")
        page.wait_for_selector(".tr-conversation", timeout=600_000)
        browser.close()
    return next(f for f in sent if f.startswith('{"method":"init"'))


def chromium() -> str | None:
    """Debian's Chromium, which the reviewers step drives (Playwright cannot download
    its own browser here); None when it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(p):
    return p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])


class _Client:
    """One reviewer as Shiny's browser client would talk: inputs out, outputs back."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.rows: list[str] = []

    async def send(self, data: dict) -> None:
        await self.ws.send(json.dumps({"method": "update", "data": data}))

    async def until(self, output: str, test=lambda html: True) -> str:
        while True:
            msg = json.loads(await self.ws.recv())
            value = (msg.get("values") or {}).get(output)
            if isinstance(value, dict) and test(value.get("html") or ""):
                if output == "list-rows":
                    self.rows = re.findall(r'data-conversation="([^"]*)"', value["html"])
                return value["html"]


async def _reviewers(
    server: Server, init: str, sessions: int, rounds: int, think: tuple[float, float]
) -> tuple[list[float], list[float], list[float]]:
    import asyncio
    import random

    pause = random.Random(7)

    import websockets

    opens: list[float] = []
    lists: list[float] = []
    url = server.url.replace("http://", "ws://") + "websocket/"
    rss = [server.rss_mb()]
    clients = []
    for _ in range(sessions):
        ws = await websockets.connect(url, max_size=None)
        client = _Client(ws)
        await ws.send(init)
        await client.send({NAV_INPUTS["url_state"]: {"search": "?view=answers", "initial": True}})
        await client.until("list-rows")
        clients.append(client)
        rss.append(server.rss_mb())

    async def work(c: _Client, k: int) -> None:
        for r in range(rounds):
            await asyncio.sleep(pause.uniform(*think))
            cid = html_lib.unescape(c.rows[(k + r) % len(c.rows)])
            t = time.perf_counter()
            await c.send(
                {NAV_INPUTS["nav"]: {"conversation": cid, "exchange": None, "history": "push"}}
            )
            mark = f'data-conversation="{html_lib.escape(cid)}"'
            await c.until(TRANSCRIPT_OUTPUT, lambda h, m=mark: m in h)
            opens.append(time.perf_counter() - t)
            await asyncio.sleep(pause.uniform(*think))
            t = time.perf_counter()
            if r % 2 == 0:
                await c.send({"list-page_to": 2 + r // 2})
            else:
                await c.send({"list-tags": ["C"] if r % 4 == 1 else []})
            await c.until("list-rows")
            lists.append(time.perf_counter() - t)

    await asyncio.gather(*(work(c, k) for k, c in enumerate(clients)))
    rss.append(server.rss_mb())
    for c in clients:
        await c.ws.close()
    return opens, lists, rss


LONG_TURNS = 20_000


def long_corpus(mid: Path, workdir: Path, turns: int = LONG_TURNS) -> Path:
    """The mid corpus with one conversation of `turns` answers beside it, the newest (its
    files hard-linked, not copied)."""
    from trajectory_review_bench.answers import SPAN_DAYS, START_NS
    from trajectory_review_bench.generate import long_conversation

    out = workdir / f"{mid.name}-long-{turns}"
    marker = out / ".complete"
    if not marker.exists():
        out.mkdir(parents=True, exist_ok=True)
        for f in mid.iterdir():
            if f.is_file() and not f.name.startswith(".") and not (out / f.name).exists():
                os.link(f, out / f.name)
        long_conversation(out / "long.jsonl", turns, START_NS + (SPAN_DAYS + 1) * 86_400 * 10**9)
        marker.write_text("ok")
    return out


def bench_long_ready(mid: Path, workdir: Path, repeat: int = 3, turns: int = LONG_TURNS) -> dict:
    """`serve` until its list on the mid corpus with one 20,000-answer conversation beside
    it (the newest: in the first slice), over the same without it; runs alternated, the
    median of the pairs' ratios (goal <= 2: one recorded conversation must not cost a
    team its morning)."""
    long = long_corpus(mid, workdir, turns)
    pairs = []
    for _ in range(max(1, repeat)):
        without, _j = bench_ready(mid)
        with_long, _j = bench_ready(long)
        pairs.append((without, with_long))
    return {
        "long_conversation_ready_vs_without": statistics.median(w / wo for wo, w in pairs),
        "long_conversation_ready_runs_seconds": [[round(a, 3), round(b, 3)] for a, b in pairs],
    }


def bench_long_open(mid: Path, workdir: Path, repeat: int = 3, turns: int = LONG_TURNS) -> dict:
    """Opening the 20,000-answer conversation, cold (the server has not read it since it
    started), on a settled server: click to its transcript with the first answer drawn
    (goal <= 2 s; a browser client speaking Shiny's protocol, as the reviewers step)."""
    import asyncio

    long = long_corpus(mid, workdir, turns)
    cid = f"long-{turns}"
    cache = tempfile.mkdtemp(prefix="trajectory-review-bench-cache-")
    seconds = []
    try:
        for _ in range(max(1, repeat)):
            server = Server(long, cache=cache)  # a new process: the conversation is cold
            try:
                server.wait_ready(judged=True)
                init = _browser_init(server)
                seconds.append(asyncio.run(_open_once(server, init, cid)))
            finally:
                server.stop()
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "long_conversation_open_seconds": statistics.median(seconds),
        "long_conversation_open_runs_seconds": [round(s, 3) for s in seconds],
    }


async def _open_once(server: Server, init: str, cid: str) -> float:
    import websockets

    url = server.url.replace("http://", "ws://") + "websocket/"
    async with websockets.connect(url, max_size=None) as ws:
        client = _Client(ws)
        await ws.send(init)
        await client.send({NAV_INPUTS["url_state"]: {"search": "?view=answers", "initial": True}})
        await client.until("list-rows")
        t = time.perf_counter()
        await client.send({"nav": {"conversation": cid, "exchange": None, "history": "push"}})
        mark = f'data-conversation="{html_lib.escape(cid)}"'
        await client.until(TRANSCRIPT_OUTPUT, lambda h: mark in h and "tr-assistant" in h)
        return time.perf_counter() - t


def bench_whatif(src: Path, repeat: int = 3) -> dict:
    """`lint --rules CANDIDATE --compare --json` (every answer replayed once and judged by
    both profiles) over `lint --json` on the same corpus, runs alternated, the median of
    the pairs' ratios (goal <= 1.3: only the rules run twice)."""
    from trajectory_review.rules.registry import profile_path

    with tempfile.TemporaryDirectory() as tmp:
        candidate = Path(tmp) / "candidate.toml"
        candidate.write_text(
            profile_path("default").read_text(encoding="utf-8")
            + "\n[[no-banned-phrases.pattern]]\n"
            + "regex = '\\bacre-weighted\\b'\nreason = \"jargon\"\n",
            encoding="utf-8",
        )
        pairs = []
        for _ in range(max(1, repeat)):
            lint = bench_lint(src)
            t = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "trajectory_review", "lint", str(src), "--rules",
                 str(candidate), "--compare", "--json", "--fail-on", "never"],
                env=_env("off"),
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            pairs.append((lint, time.perf_counter() - t))
    return {
        "whatif_vs_lint": statistics.median(w / lint for lint, w in pairs),
        "whatif_runs_seconds": [[round(a, 3), round(b, 3)] for a, b in pairs],
    }
