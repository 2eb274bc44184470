"""The one display table: every label, icon, body and class a provenance tag shows.

The live assistant's users saw exactly these strings; replay is faithful only if the
reviewer sees the same ones. No other module may hold them: the list pill, the aside
after an answer, filters, legends, the chart and the export all read from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec


@dataclass(frozen=True)
class Tone:
    """A tag's colours: text, background, and the line (dots, bars, borders)."""

    fg: str
    bg: str
    line: str


@dataclass(frozen=True)
class TagDisplay:
    tag: str | None
    label: str
    icon: str | None  # icon name under static/icons, or None
    body: str
    pill_class: str
    shows_aside: bool  # B's UI is its citation asides; no claim shows nothing
    tone: Tone = Tone("#5a6472", "#eef0f3", "#a0a8b3")


DISPLAY: dict[str, TagDisplay] = {
    "A": TagDisplay(
        "A",
        "Verified answer",
        "trusted",
        "This answer comes from a governed calculation defined by your data team.",
        "trusted",
        True,
        Tone("#1f7a4d", "#e6f4ec", "#1f7a4d"),
    ),
    "B": TagDisplay(
        "B",
        "Cited",
        None,
        "This answer includes supporting text verified against a trusted source.",
        "cited",
        False,
        Tone("#2b6cb0", "#e8f0fb", "#2b6cb0"),
    ),
    "C": TagDisplay(
        "C",
        "Untrusted",
        "warning",
        # one literal, so the string users saw stays grep-able
        "This answer was not produced by a governed calculation and has no verified supporting citation. AI can be wrong.",  # noqa: E501
        "caution",
        True,
        Tone("#975a16", "#fdf3e1", "#d69e2e"),
    ),
}

# Not a claim the assistant made: how the reviewer's UI names the absence of one.
NO_CLAIM = TagDisplay(
    None,
    "No claim",
    None,
    "No provenance was recorded for this answer (no data tool ran, or the record is "
    "missing or contradictory).",
    "none",
    False,
)

REVIEW_AUDIT_LABEL = "Review audit"
REVIEW_AUDIT_ICON = "audit"

# Citation asides: an icon per source kind.
CITATION_ICONS = {
    "prose": "citation-prose",
    "definition": "citation-definition",
    "schema": "citation-schema",
}

# What each source kind is called where a citation's popover names it.
CITATION_KIND_LABELS = {
    "prose": "Documentation",
    "definition": "Definition",
    "schema": "Schema",
}


def popover_heads(base: str = "") -> dict[str, str]:
    """Icon URL -> kind label: how the page names a citation's source kind in its popover."""
    return {icon_path(CITATION_ICONS[k], base): v for k, v in CITATION_KIND_LABELS.items()}


def _css_string(text: str) -> str:
    return '"' + "".join(c if c.isalnum() or c in " -_./" else f"\\{ord(c):x} " for c in text) + '"'


def popover_css() -> str:
    """A citation's popover shows shinychat's label and icon for its source; the name of
    the source's kind (this table's) follows them, chosen by the icon. CSS, not script:
    paging through grouped sources swaps the icon in place, and the name follows it."""
    return (
        "\n".join(
            f".shiny-aside-popover__label:has(img[src={_css_string(src)}])::after "
            f"{{ content: {_css_string(label)}; }}"
            for src, label in popover_heads().items()
        )
        + "\n"
    )


# Filter values in display order: the tags, then "no claim" (key "none").
FILTER_KEYS = (*DISPLAY, "none")


def display(tag: str | None) -> TagDisplay:
    return DISPLAY.get(tag or "", NO_CLAIM)


def display_for_key(key: str) -> TagDisplay:
    return NO_CLAIM if key == "none" else DISPLAY[key]


def tag_key(tag: str | None) -> str:
    return tag if tag in DISPLAY else "none"


def tone_css() -> str:
    """The stylesheet rules that colour each tag's pill, dot, chart bar and answer border,
    from the table (served in the page head): a new tag is one entry above, not CSS."""
    rules = [":root {"]
    for d in (*DISPLAY.values(), NO_CLAIM):
        c, t = d.pill_class, d.tone
        rules.append(f"  --tr-{c}: {t.fg}; --tr-{c}-bg: {t.bg}; --tr-{c}-line: {t.line};")
    rules.append("}")
    for d in (*DISPLAY.values(), NO_CLAIM):
        c = d.pill_class
        rules += [
            f".tr-pill-{c} {{ color: var(--tr-{c}); background: var(--tr-{c}-bg); "
            f"border-color: color-mix(in srgb, var(--tr-{c}-line) 35%, white); }}",
            f".tr-dot-{c} {{ background: var(--tr-{c}-line); }}",
            f".tr-fill-{c} {{ fill: var(--tr-{c}-line); }}",
        ]
        if d.tag is not None:
            border = f"border-left: 3px solid var(--tr-{c}-line);"
            rules.append(f'.tr-assistant[data-tag="{d.tag}"] {{ {border} }}')
        if d.icon:
            rules.append(
                f'.shiny-aside-pill:has(img[src$="icons/{d.icon}.svg"]) {{ color: var(--tr-{c}) '
                f"!important; background: var(--tr-{c}-bg) !important; }}"
            )
    return "\n".join(rules) + "\n"


def review_audit_body(rejected: int) -> str:
    return "1 citation rejected." if rejected == 1 else f"{rejected} citations rejected."


def malformed_note(malformed: int) -> str:
    return "1 malformed citation" if malformed == 1 else f"{malformed} malformed citations"


def live_icon_url(name: str) -> str:
    """An icon's URL as the live chat streamed it (commons serves its icons there)."""
    return f"commons-icons/{name}.svg"


def icon_path(name: str, base: str = "") -> str:
    """URL of an icon under static/icons; base is "" for a URL relative to the page."""
    return f"{base}icons/{name}.svg"


class Chip(msgspec.Struct, frozen=True, gc=False):
    """An aside shown after an answer: the provenance aside or the review audit."""

    kind: str  # "provenance" | "review-audit"
    label: str
    body: str
    icon: str | None
    pill_class: str
    tag: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        d: dict[str, str | None] = {"kind": self.kind, "label": self.label, "body": self.body}
        if self.tag:
            d["tag"] = self.tag
        return d


def chips_after_answer(tag: str | None, rejected: int) -> list[Chip]:
    chips = []
    d = display(tag)
    if d.tag is not None and d.shows_aside:
        chips.append(Chip("provenance", d.label, d.body, d.icon, d.pill_class, d.tag))
    if rejected > 0:
        chips.append(
            Chip(
                "review-audit",
                REVIEW_AUDIT_LABEL,
                review_audit_body(rejected),
                REVIEW_AUDIT_ICON,
                "audit",
            )
        )
    return chips
