"""The one display table: the strings users saw, held in exactly one place."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajectory_review.model import provenance
from trajectory_review.model.provenance import chips_after_answer, display, review_audit_body

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "static"


def test_display_table_holds_the_live_strings_exactly():
    a, b, c = display("A"), display("B"), display("C")
    assert (a.label, a.icon, a.pill_class) == ("Verified answer", "trusted", "trusted")
    assert a.body == "This answer comes from a governed calculation defined by your data team."
    assert (b.label, b.icon, b.pill_class) == ("Cited", None, "cited")
    assert b.body == "This answer includes supporting text verified against a trusted source."
    assert (c.label, c.icon, c.pill_class) == ("Untrusted", "warning", "caution")
    assert c.body == (
        "This answer was not produced by a governed calculation and has no "
        "verified supporting citation. AI can be wrong."
    )


def test_labels_and_bodies_live_in_one_source_file():
    sources = [p for p in (ROOT / "src").rglob("*") if p.suffix in (".py", ".js", ".css")]
    sources += [p for p in STATIC.rglob("*") if p.suffix in (".js", ".css")]
    sources.append(ROOT / "app.py")
    for d in provenance.DISPLAY.values():
        for text in (d.label, d.body):
            holders = [p.name for p in sources if text in p.read_text(encoding="utf-8")]
            assert holders == ["provenance.py"], (text, holders)


def test_asides_after_an_answer():
    assert [c.label for c in chips_after_answer("A", 0)] == ["Verified answer"]
    assert chips_after_answer("B", 0) == [] and chips_after_answer(None, 0) == []
    assert [c.label for c in chips_after_answer("C", 2)] == ["Untrusted", "Review audit"]
    assert [c.body for c in chips_after_answer(None, 1)] == ["1 citation rejected."]
    assert review_audit_body(3) == "3 citations rejected."


def test_every_icon_the_table_names_is_shipped():
    names = {d.icon for d in provenance.DISPLAY.values() if d.icon}
    names |= set(provenance.CITATION_ICONS.values()) | {provenance.REVIEW_AUDIT_ICON}
    for name in names:
        assert (STATIC / provenance.icon_path(name)).exists(), name


def test_every_tags_colours_come_from_the_display_table():
    css = provenance.tone_css()
    static = (STATIC / "app.css").read_text()
    for d in [*provenance.DISPLAY.values(), provenance.NO_CLAIM]:
        for selector in (f".tr-pill-{d.pill_class}", f".tr-dot-{d.pill_class}"):
            assert selector in css and selector not in static
        assert d.tone.fg in css and d.tone.fg not in static


@pytest.mark.parametrize("days", [7, 99, 140, 1000])
def test_every_bar_of_the_trust_chart_stays_inside_its_drawing_area(days):
    import re
    from datetime import date, timedelta

    import pandas as pd

    from trajectory_review.app.chart import trust_chart

    periods = [date(2026, 1, 1) + timedelta(days=i) for i in range(days)]
    frame = pd.DataFrame(
        [{"period": p, "tag": t, "n": 1 + i % 3} for i, p in enumerate(periods) for t in "AC"]
    )
    svg = str(trust_chart(frame, "day"))
    width = float(re.search(r'viewBox="0 0 ([\d.]+)', svg).group(1))
    rects = re.findall(r'<rect[^>]*x="([\d.]+)"[^>]*width="([\d.]+)"', svg)
    assert len(rects) == 2 * days
    assert max(float(x) + float(w) for x, w in rects) <= width + 0.01


def test_a_tag_is_named_only_in_the_display_table():
    """A new trust tag is one entry of the table: no other module of the app names one
    (the generator under tools/ plays the live assistant, which decides tags)."""
    import re

    app = ROOT / "src" / "trajectory_review"
    tags = "|".join(map(re.escape, provenance.DISPLAY))
    named = re.compile(r"""["'](?:""" + tags + r""")["']""")
    holders = [
        str(p.relative_to(app))
        for p in app.rglob("*.py")
        if p.parts[-2] != "tools" and named.search(p.read_text(encoding="utf-8"))
    ]
    assert holders == ["model/provenance.py"]
