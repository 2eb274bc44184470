"""Deep links, back/forward, keyboard, and the panels around the transcript."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from shiny.playwright import controller

from tests.browser.conftest import open_filters


def current_exchange(page) -> str | None:
    el = page.locator(".tr-exchange.tr-current")
    return el.get_attribute("data-exchange") if el.count() else None


def test_deep_link_opens_and_scrolls_to_the_exchange(open_app):
    page = open_app("?conversation=scene-multi&exchange=3")
    expect(page.locator(".tr-conversation")).to_have_attribute("data-conversation", "scene-multi")
    expect(page.locator("#ex-3")).to_have_class(re.compile("tr-current"))
    expect(page.locator("#ex-3")).to_be_in_viewport()


def test_back_and_forward_restore_the_previous_selection(open_app):
    # the search keeps both on the first page of the list, whatever else is in the traces
    page = open_app("?conversation=scene-multi&q=scene")
    page.locator("#ex-2 .tr-ex-anchor").click()
    expect(page).to_have_url(re.compile(r"conversation=scene-multi&exchange=2"))
    page.locator(".tr-row[data-conversation='scene-cited']").click()
    expect(page.locator(".tr-conversation")).to_have_attribute("data-conversation", "scene-cited")
    page.go_back()
    expect(page.locator(".tr-conversation")).to_have_attribute("data-conversation", "scene-multi")
    expect(page.locator("#ex-2")).to_have_class(re.compile("tr-current"))
    page.go_forward()
    expect(page.locator(".tr-conversation")).to_have_attribute("data-conversation", "scene-cited")


def test_a_deep_link_adds_no_history_entry_of_its_own(open_app):
    # The address bar was told "?" (nothing selected yet) before the link's own selection
    # came back, which pushed an entry: Back from a deep link stayed in the app.
    page = open_app("?conversation=scene-multi&exchange=3")
    expect(page.locator("#ex-3")).to_have_class(re.compile("tr-current"))
    assert page.evaluate("history.length") == 2  # the blank page, then the link
    page.locator("#ex-2 .tr-ex-anchor").click()
    expect(page).to_have_url(re.compile(r"exchange=2"))
    assert page.evaluate("history.length") == 3  # a reviewer's own step is one entry
    page.go_back()
    expect(page).to_have_url(re.compile(r"conversation=scene-multi&exchange=3$"))
    expect(page.locator("#ex-3")).to_have_class(re.compile("tr-current"))


def test_filters_live_in_the_query_string(open_app):
    page = open_app("?view=answers&tag=C&q=scene-multi")
    controller.InputRadioButtons(page, "list-view").expect_selected("answers")
    rows = page.locator(".tr-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-conversation", "scene-multi")
    # the address keeps every filter (in the table's order: listing/filters.FILTERS)
    expect(page).to_have_url(re.compile(r"view=answers.*q=scene-multi.*tag=C"))


def test_a_deep_links_filters_are_in_the_page_before_the_server_speaks(page, app_server):
    # Served HTML, no script run: the inputs already hold the link's state, so no late
    # update can undo a click made while the session starts.
    html = page.request.get(app_server.url + "?view=answers&tag=C&rejected=1").text()
    assert re.search(r'value="answers"[^>]*checked', html)
    assert re.search(r'value="C"[^>]*checked', html)
    assert re.search(r'id="list-rejected"[^>]*checked', html)
    assert re.search(r'data-tr-count="tags-C">\(\d+\)', html)


def test_clicks_made_while_the_page_starts_are_never_undone(open_app):
    page = open_app("", wait_transcript=False)
    # click as fast as a script can, before the first counts update has landed
    page.locator("#list-view input[value='answers']").check()
    open_filters(page)
    page.locator("#list-tags input[value='C']").check()
    page.locator("#list-rejected").check()
    expect(page.locator(".tr-list-summary")).to_contain_text("answers")
    expect(page).to_have_url(re.compile(r"view=answers.*tag=C.*rejected=1"))
    # Both filters' chips are drawn from the server's flush after it handled the last
    # click: every update it queued before (the start's own) has reached the page by then.
    expect(page.locator(".tr-list-summary .tr-chip-filter")).to_have_count(2)
    controller.InputRadioButtons(page, "list-view").expect_selected("answers")
    controller.InputCheckboxGroup(page, "list-tags").expect_selected(["C"])
    controller.InputCheckbox(page, "list-rejected").expect_checked(True)
    pills = page.locator(".tr-row .tr-pill")
    assert pills.count() > 0
    assert {pills.nth(i).get_attribute("data-tag") for i in range(pills.count())} == {"C"}


def test_filter_counts_follow_the_other_filters(open_app):
    page = open_app("")
    count = page.locator("[data-tr-count='tags-C']")
    before = count.inner_text()
    open_filters(page)
    page.locator("#list-rejected").check()
    expect(count).not_to_have_text(before)
    expect(page.locator("#list-rejected")).to_be_checked()
    expect(page.locator("#list-review option[value='unreviewed']")).to_have_text(
        re.compile(r"Unreviewed \([\d,]+\)")
    )


def test_j_and_k_move_through_conversations_and_n_p_through_answers(open_app):
    page = open_app("?q=scene")
    # the ten scene conversations, once the deep link's search has reached the list
    expect(page.locator(".tr-list-summary")).to_contain_text(re.compile(r"^\s*10 conversations"))
    first = page.locator(".tr-row").nth(0).get_attribute("data-conversation")
    second = page.locator(".tr-row").nth(1).get_attribute("data-conversation")
    conv = page.locator(".tr-conversation")
    expect(conv).to_have_attribute("data-conversation", first)
    page.locator("body").press("j")
    expect(conv).to_have_attribute("data-conversation", second)
    expect(page.locator(".tr-row").nth(1)).to_have_class(re.compile("tr-row-selected"))
    page.locator("body").press("k")
    expect(conv).to_have_attribute("data-conversation", first)
    page.goto(page.url.split("?")[0] + "?conversation=scene-multi")
    page.wait_for_selector("#ex-4")
    page.locator("body").press("n")
    expect(page.locator("#ex-1")).to_have_class(re.compile("tr-current"))
    page.locator("body").press("n")
    expect(page.locator("#ex-2")).to_have_class(re.compile("tr-current"))
    page.locator("body").press("p")
    expect(page.locator("#ex-1")).to_have_class(re.compile("tr-current"))


def test_slash_focuses_search_and_question_mark_opens_help(open_app):
    page = open_app()
    page.locator("body").press("?")
    expect(page.locator(".tr-help")).to_be_visible()
    expect(page.locator(".tr-help")).to_contain_text("next / previous conversation")
    page.keyboard.press("Escape")
    expect(page.locator(".tr-help")).to_be_hidden()
    page.locator("body").press("/")
    expect(page.locator("#list-q")).to_be_focused()


def test_pills_are_reachable_by_tab(open_app):
    page = open_app("?conversation=scene-cited")
    page.locator("#ex-1 .tr-ex-anchor").focus()
    seen = []
    for _ in range(12):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("document.activeElement.className"))
    assert any("tr-pill" in c for c in seen)
    assert any("shiny-aside-pill" in c for c in seen)


def test_copy_link_points_at_the_exchange(open_app, context):
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = open_app("?conversation=scene-multi")
    page.locator("#ex-2 .tr-btn-copy").click()
    expect(page.locator("#ex-2 .tr-btn-copy")).to_have_text("Copied")
    url = page.locator("#ex-2 .tr-btn-copy").get_attribute("data-url")
    assert "conversation=scene-multi" in url and "exchange=2" in url


def test_warnings_count_and_panel_link_to_conversations(open_app):
    page = open_app()
    button = page.locator(".tr-warn-btn")
    expect(button).to_contain_text(re.compile(r"\d+ warning"))
    button.click()
    modal = page.locator(".modal")
    expect(modal).to_contain_text("not JSON")
    link = modal.locator("a[data-conversation]").first
    cid = link.get_attribute("data-conversation")
    link.click()
    expect(page.locator(".tr-conversation")).to_have_attribute("data-conversation", cid)


def test_trust_over_time_chart_uses_the_display_table(open_app):
    page = open_app()
    controller.NavsetUnderline(page, "main_tabs").set("chart")
    chart = page.locator(".tr-chart")
    expect(chart).to_be_visible()
    expect(page.locator(".tr-legend")).to_contain_text("Verified answer")
    assert page.locator(".tr-chart rect.tr-fill-trusted").count() > 0
    page.locator(".tr-chart-wrap summary").click()
    expect(page.locator(".tr-table")).to_contain_text("Untrusted")


def test_abandoned_branch_opens_as_a_sibling(open_app):
    page = open_app("?conversation=scene-edited")
    expect(page.locator("#ex-2 .tr-user")).to_contain_text("And the densest?")
    expect(page.locator("#ex-2 .tr-ex-pill")).to_have_attribute("data-tag", "C")
    page.locator(".tr-branches a", has_text="branch 1").click()
    conv = page.locator(".tr-conversation")
    expect(conv).to_have_attribute("data-conversation", "scene-edited~1")
    expect(page.locator("#ex-2 .tr-user")).to_contain_text("And the youngest?")
    expect(page.locator("#ex-2 .tr-ex-pill")).to_have_attribute("data-tag", "B")
    page.locator(".tr-branch-note a").click()
    expect(conv).to_have_attribute("data-conversation", "scene-edited")


def test_a_filtered_conversation_opens_at_the_answer_it_matched(open_app):
    page = open_app("?q=scene-multi&tag=C")
    row = page.locator(".tr-row[data-conversation='scene-multi']")
    expect(row.locator(".tr-pill")).to_have_attribute("data-tag", "C")  # not the latest (A)
    row.click()
    expect(page.locator("#ex-2")).to_have_class(re.compile("tr-current"))
    expect(page).to_have_url(re.compile(r"conversation=scene-multi&exchange=2"))


def test_a_filtered_link_opens_its_first_conversation_at_the_matched_answer(open_app):
    page = open_app("?q=scene-multi&tag=C")
    expect(page.locator(".tr-conversation")).to_have_attribute("data-conversation", "scene-multi")
    expect(page.locator("#ex-2")).to_have_class(re.compile("tr-current"))


@pytest.mark.parametrize("size", [(1280, 800), (1440, 900)])
def test_a_laptop_screen_shows_the_list_with_the_filters_as_chips(browser, app_server, size):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(app_server.url + "?view=answers&tag=C&rejected=1")
    page.wait_for_selector(".tr-row", timeout=30_000)
    chips = page.locator(".tr-chip-filter")
    expect(chips).to_have_text(["Untrusted", "rejected citations"])
    expect(page.locator("#list-rejected")).to_be_hidden()  # folded away
    # the answers, and the QA queue with its progress, toggle and a chip: eight rows
    for query in ("?view=answers", "?view=flagged&tag=C"):
        page.goto(app_server.url + query)
        page.wait_for_selector(".tr-row", timeout=30_000)
        visible = [
            r
            for r in page.locator(".tr-row").all()
            if (b := r.bounding_box()) and b["y"] + b["height"] <= size[1]
        ]
        assert len(visible) >= 8, query
    page.goto(app_server.url + "?view=answers&tag=C")
    page.wait_for_selector(".tr-chip-filter", timeout=30_000)
    page.locator("#list-clear_all").click()
    expect(page.locator(".tr-chip-filter")).to_have_count(0)
    expect(page).not_to_have_url(re.compile("tag=C"))
    page.close()


def test_the_header_says_what_the_server_reads_on_hover(open_app, app_server):
    page = open_app("", wait_transcript=False)
    title = page.locator(".tr-header-stats").get_attribute("title")
    assert f"Review log: {app_server.review_log}" in title
    assert "Rules: the shipped default profile" in title and "Sources: " in title
