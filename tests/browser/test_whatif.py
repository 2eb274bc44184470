"""The What if tab (issue #36): a candidate profile pasted, checked, run in the background
with its progress, its table, and a changed answer opened with both decisions."""

from __future__ import annotations

import re

from playwright.sync_api import expect
from shiny.playwright import controller

from trajectory_review.rules.registry import profile_path

CANDIDATE = (
    profile_path("default").read_text(encoding="utf-8")
    + "\n[[no-banned-phrases.pattern]]\nregex = '\\bacre-weighted\\b'\nreason = \"jargon\"\n"
)


def test_a_pasted_candidate_runs_over_every_answer_and_opens_a_changed_one(open_app):
    page = open_app("", wait_transcript=False)
    controller.NavsetUnderline(page, "main_tabs").set("whatif")
    pasted = page.locator("#whatif-pasted")
    pasted.fill("[no-banned-phrases]\nnope = 1\n")
    expect(page.locator(".tr-whatif-error")).to_contain_text("unknown key 'nope'")
    pasted.fill(CANDIDATE)
    expect(page.locator("#whatif-checked")).to_contain_text("Candidate: the pasted profile")
    page.locator("#whatif-run").click()
    result = page.locator(".tr-whatif-result")
    expect(result).to_be_visible(timeout=60_000)
    row = result.locator("tr[data-rule='no-banned-phrases']")
    expect(row).to_contain_text(re.compile(r"\+\d+"))
    first = result.locator(".tr-whatif-changes a").first
    cid, ex = first.get_attribute("data-conversation"), first.get_attribute("data-exchange")
    first.click()
    strip = page.locator(f"#ex-{ex} .tr-whatif-strip")
    expect(strip).to_be_visible()
    expect(strip).to_contain_text("no-banned-phrases")
    expect(strip.locator("td").nth(1)).to_contain_text("passed")
    expect(strip.locator("td").nth(2)).to_contain_text("flagged")
    expect(page.locator(".tr-conversation")).to_have_attribute("data-conversation", cid)
