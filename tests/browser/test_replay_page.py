"""What the reviewer sees is what the user saw, and model text never runs."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.conftest import settled
from tests.browser.scenes import QUOTE, REASON, REJECTED_QUOTE
from trajectory_review.model import provenance


def kind_named(label) -> str:
    """The source kind the popover's header names after its label (a CSS ::after)."""
    content = label.evaluate("el => getComputedStyle(el, '::after').content")
    return content.strip('"')


def test_list_pills_match_the_display_table(open_app):
    page = open_app("?view=answers")
    for key in ("A", "C"):
        d = provenance.display(key)
        pill = page.locator(f".tr-row .tr-pill[data-tag='{key}']").first
        expect(pill).to_have_text(d.label)
        expect(pill).to_have_attribute("data-tip", d.body)
        expect(pill).to_have_class(f"tr-pill tr-pill-{d.pill_class}")


def test_a_pills_tooltip_shows_on_hover_and_on_keyboard_focus(open_app):
    page = open_app("?view=answers")
    d = provenance.display("C")
    # the last one: hovering it scrolls the list first, which must not hide the tooltip
    pill = page.locator(".tr-row .tr-pill[data-tag='C']").last
    tip = page.locator(".tr-tip")
    pill.hover()
    expect(tip).to_be_visible()
    expect(tip).to_have_text(d.body)
    page.mouse.move(0, 0)
    expect(tip).to_be_hidden()
    pill.focus()  # as Tab leaves it
    expect(tip).to_be_visible()
    expect(tip).to_have_text(d.body)
    page.keyboard.press("Escape")
    expect(tip).to_be_hidden()


def test_transcript_pill_matches_the_list_pill(open_app):
    page = open_app("?conversation=scene-multi&view=answers&q=scene-multi")
    rows = page.locator(".tr-row[data-conversation='scene-multi']")
    expect(rows).to_have_count(4)
    for i in range(4):
        row_pill = rows.nth(i).locator(".tr-pill")
        ex = rows.nth(i).get_attribute("data-exchange")
        ex_pill = page.locator(f"#ex-{ex} .tr-ex-pill")
        assert row_pill.get_attribute("data-tip") == ex_pill.get_attribute("data-tip")
        assert row_pill.inner_text() == ex_pill.inner_text()
        assert row_pill.get_attribute("class") == ex_pill.get_attribute("class").replace(
            " tr-ex-pill", ""
        )


def test_provenance_asides_follow_each_answer(open_app):
    page = open_app("?conversation=scene-multi")
    a, c = provenance.display("A"), provenance.display("C")
    expect(page.locator("#ex-1 .shiny-aside-pill")).to_contain_text(a.label)
    expect(page.locator("#ex-2 .shiny-aside-pill")).to_contain_text(c.label)
    expect(page.locator("#ex-3 .shiny-aside-pill")).to_have_count(0)  # no claim: nothing
    page.locator("#ex-2 .shiny-aside-pill").first.click()
    expect(page.locator(".shiny-aside-popover")).to_contain_text(c.body)


def citation_pill(page, label: str, ex: int = 1):
    """A citation's compact marker, found by the source it names (its accessible name)."""
    return page.locator(f"#ex-{ex} .tr-assistant .shiny-aside-pill[aria-label*='{label}']")


def test_citation_pill_opens_its_popover_and_rejected_quotes_are_nowhere(open_app):
    page = open_app("?conversation=scene-cited")
    pill = citation_pill(page, "Reporting guide")
    expect(pill).to_have_count(1)
    expect(pill).to_have_attribute("data-shinychat-aside-display", "compact")
    audit = page.locator("#ex-1 .shiny-aside-pill").filter(has_text="Review audit")
    expect(audit).to_have_count(1)
    pill.click()
    popover = page.locator(".shiny-aside-popover")
    expect(popover).to_contain_text(REASON)
    expect(popover).to_contain_text(QUOTE)
    # the source's label, its kind's icon (from static/) and the kind's name (display table)
    head = popover.locator(".shiny-aside-popover__label")
    expect(head.locator(".shiny-aside-popover__label-text")).to_have_text("Reporting guide")
    expect(head.locator("img")).to_have_attribute(
        "src", provenance.icon_path(provenance.CITATION_ICONS["prose"])
    )
    assert kind_named(head) == provenance.CITATION_KIND_LABELS["prose"]
    icon = page.request.get(page.url.split("?")[0] + head.locator("img").get_attribute("src"))
    assert icon.ok and "svg" in icon.headers["content-type"]
    page.keyboard.press("Escape")
    audit.click()
    expect(page.locator(".shiny-aside-popover")).to_contain_text("2 citations rejected.")
    # the rejected quote is nowhere, raw view closed
    assert REJECTED_QUOTE not in page.locator(".tr-main").inner_text()


def test_citation_pill_opens_from_the_keyboard(open_app):
    page = open_app("?conversation=scene-cited")
    pill = citation_pill(page, "Reporting guide")
    pill.focus()
    page.keyboard.press("Enter")
    popover = page.locator(".shiny-aside-popover")
    expect(popover).to_contain_text(QUOTE)
    expect(popover.locator(".shiny-aside-popover__label-text")).to_have_text("Reporting guide")


def test_an_aside_after_a_code_fence_or_a_table_keeps_the_markdown_around_it(open_app):
    page = open_app("?conversation=scene-fence")
    answer = page.locator("#ex-1 .tr-assistant")
    expect(answer.locator("pre")).to_contain_text("SELECT avg(canopy) FROM plots")
    expect(answer.locator("pre")).not_to_contain_text("AFTER-FENCE")  # the fence closed
    expect(answer.locator("p").filter(has_text="AFTER-FENCE")).to_have_count(1)
    expect(citation_pill(page, "Reporting guide")).to_have_count(1)
    page = open_app("?conversation=scene-table")
    answer = page.locator("#ex-1 .tr-assistant")
    expect(answer.locator("table tbody tr")).to_have_count(2)  # the rows, and no more
    expect(answer.locator("table")).not_to_contain_text("Canopy cover")
    expect(answer.locator("p").filter(has_text="AFTER-TABLE")).to_have_count(1)
    expect(citation_pill(page, "Reporting guide")).to_have_count(1)


def test_two_adjacent_citations_share_one_marker_and_page_through_both_sources(open_app):
    page = open_app("?conversation=scene-adjacent")
    marker = page.locator("#ex-1 .tr-assistant .shiny-aside-pill")
    expect(marker).to_have_count(1)
    expect(marker).to_have_text("[1, 2]")
    marker.click()
    popover = page.locator(".shiny-aside-popover")
    expect(popover.locator(".shiny-aside-popover__label-text")).to_have_text("Reporting guide")
    head = popover.locator(".shiny-aside-popover__label")
    assert kind_named(head) == "Documentation"
    popover.get_by_role("button", name="Next source").click()
    expect(popover.locator(".shiny-aside-popover__label-text")).to_have_text("Stand guide")
    expect(popover).to_contain_text("The stand guide says so.")
    assert kind_named(head) == "Documentation"


def test_raw_toggle_shows_the_stored_text_verbatim(open_app):
    page = open_app("?conversation=scene-cited")
    page.locator("#ex-1 .tr-raw summary").click()
    raw = page.locator("#ex-1 .tr-raw-text")
    expect(raw).to_contain_text("<commons-citation>")
    expect(raw).to_contain_text(REJECTED_QUOTE)


def test_hostile_markup_never_runs_fetches_or_becomes_a_pill(open_app, leak):
    before = len(leak.paths)
    page = open_app("?conversation=scene-hostile")
    settled(page)
    answer = page.locator("#ex-1 .tr-assistant")
    # the model's own aside is dropped; the only pill is the verified citation
    expect(answer.locator(".shiny-aside-pill")).to_have_count(1)
    expect(answer.locator(".shiny-aside-pill")).to_have_attribute(
        "aria-label", "Aside 1: Reporting guide"
    )
    # its body is dropped from the answer (only the escaped raw view keeps the stored text)
    assert "SPOOFED" not in answer.inner_text()
    # script and onerror payloads are text, not code
    for flag in ("__xss_q", "__xss_q2", "__xss_a", "__xss_b"):
        assert page.evaluate(f"window.{flag}") is None, flag
    # javascript: links never become live links
    assert page.locator(".tr-main a[href^='javascript']").count() == 0
    expect(page.locator("#ex-1 .tr-user")).to_contain_text("<script>window.__xss_q=1</script>")
    expect(answer).to_contain_text("<script>window.__xss_a=1</script>")
    assert page.locator(".tr-main img[src*='leak'], .tr-main iframe").count() == 0
    # open the raw view and the tool card too: still nothing fetched
    page.locator("#ex-1 .tr-raw summary").click()
    settled(page)
    assert leak.paths[before:] == []
