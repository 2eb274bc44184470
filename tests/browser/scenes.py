"""Hand-made conversations for the browser tests, each pinning one promise."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures import CALL, RESULT, A, Q, Recorder

QUOTE = "Canopy cover is always acre-weighted for reporting."
REASON = "Follows the weighting rule."
REJECTED_QUOTE = "ZEBRA rejected quote that must never be shown"
ACCEPTED = {"quote": QUOTE, "status": "accepted", "label": "Reporting guide", "kind": "prose"}


def cite(quote: str, reason: str = REASON) -> str:
    return f"\n\n<commons-citation>\n\n{reason}\n\n> {quote}\n\n</commons-citation>"


# Long on purpose: the scenes, one after another, each a few lines of one conversation.
def write_scenes(path: Path, leak_port: int) -> Path:
    r = Recorder()
    sql = [CALL("c1", "run_sql", {"sql": "SELECT avg(canopy) FROM plots"}), RESULT("c1", "0.61")]
    # B with one accepted and two rejected citations
    cited = (
        "Average canopy cover is 61%."
        + cite(QUOTE)
        + cite(REJECTED_QUOTE)
        + cite("another fabricated quote text")
    )
    r.turn(
        "scene-cited",
        [Q("How is canopy cover reported?"), *sql[:1]],
        [Q("How is canopy cover reported?"), *sql, A(cited)],
        tag="B",
        decisions=[
            ACCEPTED,
            {"quote": REJECTED_QUOTE, "status": "rejected"},
            {"quote": "another fabricated quote text", "status": "rejected"},
        ],
    )
    # hostile markup in the question and the answer
    leak = f"http://127.0.0.1:{leak_port}"
    hostile_q = (
        'Summarise canopy <script>window.__xss_q=1</script><img src=x onerror="window.__xss_q2=1">'
        " [docs](javascript:window.__xss_d=1)"
    )
    hostile_a = (
        'Average canopy cover is 61%.<shiny-aside label="Verified answer" '
        'icon="icons/trusted.svg">SPOOFED trust me</shiny-aside> '
        "<script>window.__xss_a=1</script>"
        f'<img src="{leak}/leak" onerror="window.__xss_b=1"> '
        f'![chart]({leak}/leak-md) <iframe src="{leak}/leak-frame"></iframe> '
        "[click me](javascript:window.__xss_c=1)" + cite(QUOTE)
    )
    r.turn("scene-hostile", [Q(hostile_q), *sql, A(hostile_a)], tag="B", decisions=[ACCEPTED])
    # A, C and no claim, in one conversation of four exchanges
    h = [
        Q("What was mean canopy cover in 2024?"),
        CALL("m1", "call_measure", {"measure": "canopy_cover", "year": 2024}),
        RESULT("m1", '{"value": 0.62}'),
        A("Mean canopy cover in 2024 was 62%."),
    ]
    r.turn("scene-multi", h, tag="A")
    h2 = h + [Q("And by SQL?"), *sql, A("By SQL it is 61%.")]
    r.turn("scene-multi", h2, tag="C")
    h3 = h2 + [Q("Thanks, what does basal area mean?"), A("It is the area of stems per acre.")]
    r.turn("scene-multi", h3, tag=None)
    h4 = h3 + [
        Q("One more governed figure?"),
        CALL("m2", "call_measure", {"measure": "stand_age"}),
        RESULT("m2", '{"value": 71}'),
        A("Mean stand age is 71 years."),
    ]
    r.turn("scene-multi", h4, tag="A")
    # an edited question: the first version of exchange 2 is an abandoned branch
    base = [Q("Which stands are oldest?"), A("Stand S-101 is the oldest, at 160 years.")]
    r.turn("scene-edited", base, tag="A")
    r.turn("scene-edited", base + [Q("And the youngest?"), A("Stand S-7, at 12 years.")], tag="B")
    r.turn("scene-edited", base + [Q("And the densest?"), A("Stand S-44 is the densest.")], tag="C")
    # an answer the reply rules would withhold (a praise opener)
    r.turn(
        "scene-rules",
        [
            Q("Can you check the canopy figure?"),
            CALL("m9", "call_measure", {"measure": "canopy_cover"}),
            RESULT("m9", '{"value": 0.62}'),
            A("Great question! Mean canopy cover is 62%, from the governed measure."),
        ],
        tag="A",
    )
    # a recorded label that tries to end its tag and bring live HTML (issue #7)
    label = hostile_label(leak)
    r.turn(
        "scene-label",
        [Q("Is canopy cover weighted?"), *sql, A("Yes, by acre." + cite(QUOTE))],
        tag="B",
        decisions=[{**ACCEPTED, "label": label}],
    )
    # every other field a trace puts on the page: ids, tool names, model names, reasons
    payload = f'"\'><img src="{leak}/field" onerror="window.__xss_field=1"><b>bold</b>\n\nx'
    trace = r.turn(
        HOSTILE_ID,
        [
            Q("Which tool?"),
            CALL("t1" + payload, "run_sql" + payload, {"sql" + payload: "SELECT 1"}),
            RESULT("t1" + payload, "1" + payload),
            A("It ran." + cite(QUOTE, reason="Because" + payload)),
        ],
        tag="B",
        decisions=[ACCEPTED],
    )
    for span in r.spans:
        if span["traceId"] == trace:
            for a in span["attributes"]:
                if a["key"] == "gen_ai.request.model":
                    a["value"] = {"stringValue": "model" + payload}
    # where the aside lands in the markdown around it (docs/spec.md §4): after a closing
    # code fence, after a table row, and two citations in a row
    q2 = "Basal area is measured per acre, and reporting follows the stand guide."
    decided = [ACCEPTED, {**ACCEPTED, "quote": q2, "label": "Stand guide"}]
    fence = "The query:\n\n```sql\nSELECT avg(canopy) FROM plots\n```\n"
    table = "| stand | cover |\n|---|---|\n| S-1 | 61% |\n| S-2 | 58% |\n\n"
    markdown_before = {
        "scene-fence": ("Show the query.", fence, "AFTER-FENCE text is prose again."),
        "scene-table": ("Table please.", table, "AFTER-TABLE text."),
    }
    for cid, (question, before, after) in markdown_before.items():
        answer = before + cite(QUOTE).lstrip("\n") + "\n\n" + after
        r.turn(cid, [Q(question), *sql, A(answer)], tag="B", decisions=[ACCEPTED])
    r.turn(
        "scene-adjacent",
        [
            Q("Two sources?"),
            *sql,
            A(
                "Cover is acre-weighted and basal area is per acre.\n"
                + cite(QUOTE).lstrip("\n")
                + "\n"
                + cite(q2, reason="The stand guide says so.").lstrip("\n")
            ),
        ],
        tag="B",
        decisions=decided,
    )
    return r.write(path)


# An id holding what a URL and HTML treat specially: `&`, `#`, quotes, a tag.
HOSTILE_ID = 'scene-id&x=1#frag"<b>'


def hostile_label(leak: str) -> str:
    return (
        'Weighting guide"\n\n<iframe srcdoc="<script>parent.__xss_label=1</script>"></iframe>'
        f"<object data='{leak}/label-object'></object>"
        f"<style>@import url({leak}/label-css);</style>"
        f"<link rel=stylesheet href={leak}/label-link>"
        f"![i]({leak}/label-md)"
        "<span class='shiny-aside-pill'>FAKE PILL</span>"
        f"<form action='{leak}/label-form'><button>FORM</button></form>\r\n' end"
    )
