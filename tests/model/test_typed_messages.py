"""Messages are read typed, in C, where they hold only text, tool calls and tool results
(messages_text), and by parse_messages otherwise: whichever way an attribute is read, the
messages are the same, down to their signatures and what matching reads of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trajectory_review.index.rows import resolved
from trajectory_review.model import messages, typed
from trajectory_review.model.messages import Message, attribute_value, loads, parse_messages
from trajectory_review.model.reader import TraceReader
from trajectory_review.model.typed import messages_text

ROOT = Path(__file__).resolve().parents[2]


def everything(msgs: tuple[Message, ...]) -> list[Any]:
    """All a message holds, its parts' fields included (equality leaves some out)."""
    return [
        (
            m.role, m.sig, m.key, m.is_plain_user, m.has_tool_calls, m.has_tool_results,
            m.finish_reason,
            [(p.type, p.sig, p.content, p.id, p.name, p.arguments, p.response) for p in m.parts],
        )
        for m in msgs
    ]  # fmt: skip


@pytest.fixture
def fallbacks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The values messages_text handed to parse_messages (the typed reading refused)."""
    seen: list[Any] = []
    real = typed.parse_messages

    def spy(value: Any, by_json: Any = None) -> tuple[Message, ...]:
        seen.append(value)
        return real(value, by_json)

    monkeypatch.setattr(typed, "parse_messages", spy)
    return seen


def attributes(folder: Path) -> list[str]:
    """Every messages attribute of every chat span under `folder`, as JSON text."""
    reader = TraceReader.open([folder], cache=False)
    out = []
    for cid, rows in reader.index.iter_chat_rows():
        for row in resolved(cid, rows):
            for raw in (row.input_messages, row.output_messages):
                value = attribute_value(raw) if raw is not None else None
                out.append(value if isinstance(value, str) else json.dumps(value))
    reader.index.close()
    return out


@pytest.mark.parametrize("folder", ["traces", "tests/data/recorders"])
def test_every_recorded_attribute_reads_the_same_typed_or_not(folder, fallbacks):
    texts = attributes(ROOT / folder)
    assert texts
    typed = 0
    for text in texts:
        before = len(fallbacks)
        try:
            expected = parse_messages(loads(text))
        except messages.BadAttribute as exc:
            with pytest.raises(messages.BadAttribute, match=str(exc)[:20]):
                messages_text(text)
            continue
        read = messages_text(text)
        assert everything(read) == everything(expected), text[:200]
        typed += len(fallbacks) == before
    assert typed > 0  # the typed reading was taken, not only the fallback


def message_json(**fields: Any) -> str:
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "a"}]} | fields])


@pytest.mark.parametrize(
    ("text", "typed"),
    [
        (message_json(), True),
        # a user's text beside a tool's result: no question (is_plain_user false)
        (
            '[{"role": "user", "parts": [{"type": "text", "content": "q"},'
            ' {"type": "tool_call_response", "id": "c1", "response": 1}]}]',
            True,
        ),
        (message_json(finish_reason="stop"), True),
        ('[{"role": "user", "content": "a question without parts"}]', True),
        ('[{"parts": [{"type": "text", "content": "no role"}]}]', True),
        (
            '[{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",'
            ' "result": {"rows": 3}}]}]',
            True,
        ),
        (
            '[{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",'
            ' "response": null, "result": {"rows": 3}}]}]',
            True,
        ),
        (
            '[{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "sql",'
            ' "arguments": "{\\"q\\": 1}"}]}]',
            True,
        ),
        # an integer past 64 bits, read exactly both ways (orjson made it a float)
        (
            '[{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",'
            ' "response": {"n": 123456789012345678901234567890}}]}]',
            True,
        ),
        # each of these is refused by the typed reading and read by parse_messages
        (message_json(finish_reason=7), False),
        (message_json(**{"x-recorder": {"id": 7}}), False),
        ('[{"role": "assistant", "parts": [{"type": "thinking", "content": "hm"}]}]', False),
        ('[{"role": "assistant", "parts": [{"type": "tool_call", "id": 12, "name": "f"}]}]', False),
        ('[{"role": null, "parts": [{"type": "text", "content": "a"}]}]', False),
        ('[{"role": "user", "parts": [{"type": "text", "content": 5}]}]', False),
        ('[{"role": "user", "parts": ["bare text"]}]', False),
        ('[{"role": "user", "parts": [{"type": "text", "content": "\\ud800 lone"}]}]', False),
        ('[{"role": "tool", "parts": [{"type": "tool_call_response", "response": NaN}]}]', False),
        ("null", False),
    ],
)
def test_an_unusual_message_reads_as_parse_messages_reads_it(text, typed, fallbacks):
    expected = parse_messages(loads(text))
    fallbacks.clear()
    read = messages_text(text)
    assert everything(read) == everything(expected)
    assert (not fallbacks) is typed


def test_an_integer_past_64_bits_is_read_exactly():
    text = json.dumps(
        [{"role": "tool", "parts": [{"type": "tool_call_response", "response": 2**64}]}]
    )
    assert messages_text(text)[0].parts[0].response == 2**64
    assert loads('{"n": 18446744073709551616}') == {"n": 2**64}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"role": "user"}', "messages are not a list"),
        ("[1]", "a message is not an object"),
        ('[{"role": "user"}]', "a message has no parts list"),
        ('[{"role": "user", "parts": "text"}]', "a message has no parts list"),
        ('[{"role": "user", "parts": [', "not JSON"),
    ],
)
def test_messages_that_cannot_be_read_say_why_as_before(text, why):
    with pytest.raises(messages.BadAttribute, match=why):
        messages_text(text)
