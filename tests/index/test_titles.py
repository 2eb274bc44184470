"""A title call is told the same way by every reader: the file index (DuckDB), a
ClickHouse store (the lookup of conversations, then the resolver of fetched spans), and
the rule itself (index/titles.py)."""

from __future__ import annotations

import pytest

from tests.fixtures import A, Q
from trajectory_review.index.titles import is_title
from trajectory_review.model.reader import TraceReader
from trajectory_review.tools.load import load
from trajectory_review_bench import otlp

CASES = [
    ('[{"type": "text", "content": "  You title chat conversations."}]', True),  # JSON
    ('[{"type": "text", "content": "\\n\\tYou title chat conversations. Be brief."}]', True),
    ("  You title chat conversations. Reply with a title.", True),  # plain text
    ("\nYou title chat conversations.", True),  # plain text after a line break
    ('[{"type": "text", "content": "You title chat', False),  # torn JSON
    ('[{"type": "text", "content": "You answer questions."}]', False),
    ("You answer questions. You title chat conversations.", False),  # not at the start
    (["You title chat conversations."], False),  # an arrayValue: no JSON text
    # the prompt spelled in JSON escapes: only \uXXXX spells a letter (the resolver
    # looks for the prompt in the text before it parses the JSON)
    ('[{"type": "text", "content": "\\u0059ou title chat conversations."}]', True),
    ('[{"type": "text", "content": "\\u0059ou answer questions."}]', False),
]


def one_call(tmp_path, instructions) -> str:
    attrs = otlp.chat_attrs([Q("q")], [A("Canopy question")], conversation_id="c1")
    attrs["gen_ai.system_instructions"] = instructions
    path = tmp_path / "t.jsonl"
    path.write_text(otlp.line([otlp.span("b" * 32, "2" * 16, "chat", 1, 2, attrs=attrs)]) + "\n")
    return str(path)


@pytest.mark.parametrize(("instructions", "title"), CASES)
def test_the_rule_and_both_engines_tell_a_title_call_alike(tmp_path, store, instructions, title):
    if isinstance(instructions, str):
        assert is_title(instructions) is title
    path = one_call(tmp_path, instructions)
    files = TraceReader.open([path], cache=False)
    assert (files.conversation("c1") is None) is title
    load([path], store)
    clickhouse = TraceReader.open([store])
    assert (clickhouse.conversation("c1") is None) is title
    assert clickhouse.stats.conversations == files.stats.conversations
