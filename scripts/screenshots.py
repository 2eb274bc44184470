"""Screenshots for the README: `python scripts/screenshots.py` with the app's venv.

Starts the app on the shipped traces/ with a throwaway review log, drives Debian's
Chromium through Playwright, and writes docs/*.png.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.conftest import start_app  # noqa: E402


def pick(kind: str) -> str:
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "trajectory_review.tools.cli", "export", str(ROOT / "traces")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    for c in doc["conversations"]:
        exs = c["exchanges"]
        if (
            kind == "cited"
            and len(exs) >= 2
            and any(e["provenance_tag"] == "B" and e["rejected_citations"] for e in exs)
        ):
            return c["id"]
    return doc["conversations"][0]["id"]


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    app = start_app(ROOT / "traces", tmp / "reviews.jsonl")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"]
            )
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(app.url + f"?conversation={pick('cited')}")
            page.wait_for_selector(".tr-conversation .shiny-aside-pill")
            time.sleep(1)
            page.locator(".tr-assistant .shiny-aside-pill").first.click()
            time.sleep(0.5)
            page.screenshot(path=str(ROOT / "docs" / "transcript.png"))
            # today's commons: records on provenance spans, reminders, a document
            page.goto(app.url + "?conversation=20261202t101500.000-commons-today&exchange=2")
            page.wait_for_selector("#ex-2 .tr-artifact")
            page.locator("#ex-2 .tr-artifact summary").first.click()
            page.locator("#ex-2 .tr-reminders summary").click()
            time.sleep(1)
            page.locator("#ex-2").scroll_into_view_if_needed()
            page.screenshot(path=str(ROOT / "docs" / "commons-today.png"))
            page.goto(app.url + "?view=flagged")
            page.wait_for_selector(".tr-rules")
            # a queue under way: two answers given verdicts from the keyboard, one kept
            for key in ("x", "l"):
                page.locator("body").press(key)
                time.sleep(1.5)
            page.wait_for_selector(".tr-rules")
            time.sleep(1)
            page.screenshot(path=str(ROOT / "docs" / "flagged.png"))
            page.get_by_role("tab", name="Rule quality").click()
            time.sleep(1)
            page.screenshot(path=str(ROOT / "docs" / "rule-quality.png"))
            # the What if tab: a candidate with one more banned phrase, run over every answer
            page.get_by_role("tab", name="What if").click()
            page.locator("#whatif-pasted").fill(
                (ROOT / "src/trajectory_review/rules/profiles/default.toml").read_text()
                + "\n[[no-banned-phrases.pattern]]\nregex = '\\bacre-weighted\\b'\n"
                'reason = "jargon"\n'
            )
            page.locator("#whatif-run").click()
            page.wait_for_selector(".tr-whatif-result", timeout=120_000)
            time.sleep(1)
            page.screenshot(path=str(ROOT / "docs" / "whatif.png"))
            page.get_by_role("tab", name="Trust over time").click()
            time.sleep(1)
            page.screenshot(path=str(ROOT / "docs" / "trust-over-time.png"))
            # laptop screens: the list keeps eight rows or more in view
            for width, height in ((1280, 800), (1440, 900)):
                small = browser.new_page(viewport={"width": width, "height": height})
                small.goto(app.url + "?view=flagged&tag=C")
                small.wait_for_selector(".tr-conversation")
                time.sleep(1)
                small.screenshot(path=str(ROOT / "docs" / f"laptop-{width}x{height}.png"))
                small.close()
            browser.close()
    finally:
        app.stop()
    live_and_reviewed(tmp)


def live_and_reviewed(tmp: Path) -> None:
    """The same answer in the live commons chat and in the reviewer: the fidelity proof
    takes both while it runs (tests/browser/test_fidelity.py)."""
    base = tmp / "fidelity"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={base}",
         str(ROOT / "tests/browser/test_fidelity.py"), "-k", "shows_each_answer"],
        check=True, cwd=ROOT,
    )  # fmt: skip
    for name in ("live-answer.png", "review-answer.png"):
        shutil.copy(base / "live-chat0" / name, ROOT / "docs" / name)


if __name__ == "__main__":
    main()
