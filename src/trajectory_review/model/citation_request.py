"""The request to cite that commons adds to a tool result.

After a fallback tool call (SQL, R: outputs beyond the trusted calculations), commons
appends a short request to cite to the first tool result of the user's turn: after the
result's text, following a blank line, or as one more content part. The model reads it
as part of the result; the tool never said it. A reviewer reading it as the tool's
output would take commons' words for the data, and the reply rules would count them as
evidence. So it is split off here, the one place that knows its wording, and shown apart.
"""

from __future__ import annotations

from typing import Any

# commons' prompts/citation-request.md, as the model receives it
CITATION_REQUEST = (
    "With this most recent tool call, this turn is now based on outputs beyond trusted "
    "calculations. If trusted text you have seen supports your final answer, add a "
    "`<commons-citation>` block with one blockquote of the exact supporting text, "
    "following the citation rules given earlier. Otherwise, provide no citations."
)


def _is_request(value: Any) -> bool:
    if isinstance(value, dict):
        value = value.get("text", value.get("content"))
    return isinstance(value, str) and value.strip() == CITATION_REQUEST


def split_citation_request(response: Any) -> tuple[Any, str | None]:
    """A tool result without the request commons appended to it, and the request (None
    when it carries none): text ending in a blank line and the request, or a list of
    parts whose last part is the request."""
    if isinstance(response, str):
        body = response.rstrip()
        if body.endswith(CITATION_REQUEST):
            before = body[: -len(CITATION_REQUEST)]
            if not before or before.endswith("\n\n"):
                return before.rstrip("\n"), CITATION_REQUEST
        return response, None
    if isinstance(response, list) and response and _is_request(response[-1]):
        rest = response[:-1]
        return (rest[0] if len(rest) == 1 else rest), CITATION_REQUEST
    return response, None
