"""Buttons that send one Shiny input with a value the server wrote into the page.

A list of answers has a flag button, verdict buttons and a queue button per answer: one
Shiny input each would be an input per answer. Instead each button carries the input's
id and its value as data- attributes (htmltools escapes them; a value is JSON the server
built, never text from a trace spliced in), and one handler in static/app.js sends
`data-send` with `data-value` on a click. `note_from` names a text box whose current text
is added to the value as `note`.
"""

from __future__ import annotations

import json
from typing import Any


def sends(input_id: str, value: Any, note_from: str | None = None) -> dict[str, str]:
    attrs = {"data-send": input_id, "data-value": json.dumps(value)}
    if note_from is not None:
        attrs["data-note-from"] = note_from
    return attrs
