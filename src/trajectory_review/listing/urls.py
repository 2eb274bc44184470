"""What a URL names: a conversation and one of its answers.

Every link to a conversation is built here and every answer number read from a URL or a
browser message is parsed here. Conversation ids are data from a trace: an id holding
`&` or `#` written into a link unencoded opened another conversation in a new tab.
"""

from __future__ import annotations

from urllib.parse import urlencode

MAX_EXCHANGE = 1_000_000


def conversation_href(conversation_id: str, exchange: int | None = None) -> str:
    params = [("conversation", conversation_id)]
    if exchange:
        params.append(("exchange", str(exchange)))
    return "?" + urlencode(params)


def parse_exchange(value: object) -> int | None:
    """An answer number, or None for anything that is not one.

    ASCII digits only: `"²".isdigit()` is true and `int("²")` raises, which once
    disconnected the session of anyone who opened `?exchange=²`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        n = value
    elif isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 7:
        n = int(value)
    else:
        return None
    return n if 1 <= n <= MAX_EXCHANGE else None
