"""Run in a child process by the recorder tests (a tracer provider is set once per
process): asks the example chat's agent every scripted question, as shinychat does
(`stream_async(..., content="all")` with the conversation id set first), and writes
what each answer streamed to the user as JSON.

    python tests/record/live_driver.py TRACES OUT.json [--to DEST]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


async def ask_all(agent, questions: list[str]) -> list[dict]:
    out = []
    for question in questions:
        chunks = []
        async for chunk in await agent.stream_async(question, content="all"):
            if isinstance(chunk, str):
                chunks.append(chunk)
        out.append({"question": question, "streamed": "".join(chunks)})
    return out


def main() -> int:
    traces, result = sys.argv[1], Path(sys.argv[2])
    to = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--to" else None
    os.environ["COMMONS_TRACES_DIR"] = traces
    sys.path.insert(0, str(ROOT / "examples" / "live_chat"))
    from script import ASKED

    import app as live_chat
    from trajectory_review.record import flush, record

    agent = record(live_chat.make_agent(), to=to)
    agent.conversation_id = "live-conversation-1"
    answers = asyncio.run(ask_all(agent, ASKED))
    flush()
    result.write_text(json.dumps(answers))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
