"""Aside markup as commons streams it, and the two ways of escaping its attribute values:
the live chat's (kept in the export) and the reviewer's page's (complete)."""

from __future__ import annotations

from collections.abc import Callable

from trajectory_review.replay.citations import TRIM


def escape_attribute(value: str) -> str:
    """As the live chat escapes aside attributes: `&` first, then `"` (the export keeps
    exactly what the live chat streamed)."""
    return value.replace("&", "&amp;").replace('"', "&quot;")


_PAGE_ATTRIBUTE = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "\r": "&#13;",
     "\n": "&#10;"}
)  # fmt: skip


def escape_attribute_fully(value: str) -> str:
    """An attribute value for the reviewer's page, escaped completely.

    A recorded label is data from a trace, and shinychat's markdown parses the aside as
    an inline tag: a blank line inside the value ends the tag there, and whatever follows
    (`<iframe srcdoc>`, `<object>`, `<style>@import`) becomes live HTML. With no `<`, `>`,
    quote or line break left in it, the value cannot end the tag or the paragraph.
    """
    return value.translate(_PAGE_ATTRIBUTE)


def aside_body(reason: str, quote: str) -> str:
    """As commons writes it: the reason and one blank line (both left out when the reason
    is empty), then the quote, trimmed, every line prefixed with `> `."""
    quoted = "> " + quote.strip(TRIM).replace("\n", "\n> ")
    return f"{reason}\n\n{quoted}" if reason else quoted


def aside_markup(
    label: str,
    icon: str | None,
    body: str,
    attribute: Callable[[str], str] = escape_attribute,
    compact: bool = True,
) -> str:
    """A server-authored aside as commons streams it. A citation is `compact` (written
    first: shinychat draws a numbered marker whose popover names the source); the
    provenance aside is a labelled pill. `attribute` escapes each attribute value: the
    live chat's way for the export, `escape_attribute_fully` on the reviewer's page."""
    display = ' display="compact"' if compact else ""
    icon_attr = f' icon="{attribute(icon)}"' if icon else ""
    return f'<shiny-aside{display} label="{attribute(label)}"{icon_attr}>{body}</shiny-aside>'
