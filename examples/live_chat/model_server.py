"""A scripted OpenAI-compatible model on 127.0.0.1: `/v1/chat/completions`, streamed.

No network and no model: each question of `script.SCRIPT` has fixed steps (tool calls,
then the answer text), and the step is chosen by how many assistant messages follow the
question in the history the client sends, so a tool loop, an edited question (a branch)
and a restored conversation all get the same answers every run. Text streams in small
pieces, so the live scanner meets tags split across chunks as it does with a real model.

    python examples/live_chat/model_server.py --port 8765
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from script import SCRIPT, TITLE_INSTRUCTIONS, Step  # type: ignore[import-not-found]

PIECE = 7  # characters per streamed chunk
USAGE = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def next_step(messages: list[dict[str, Any]]) -> Step:
    """The step the script takes after this history."""
    if messages and messages[0].get("role") == "system":
        if _text(messages[0]).startswith(TITLE_INSTRUCTIONS):
            return Step(text="Scripted conversation")
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    if last_user < 0:
        return Step(text="I can only answer the scripted questions.")
    question = _text(messages[last_user])
    answered = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant")
    for asked, steps in SCRIPT.items():
        # commons may append hidden reminder text to a question: match its start
        if question.strip().startswith(asked):
            return steps[min(answered, len(steps) - 1)]
    return Step(text="I can only answer the scripted questions.")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def stream(step: Step, usage: bool) -> list[bytes]:
    out = [_chunk({"role": "assistant", "content": ""})]
    if step.tool:
        calls = [{"index": 0, "id": step.call_id,
                  "type": "function",
                  "function": {"name": step.tool, "arguments": step.args_json}}]  # fmt: skip
        out += [_chunk({"tool_calls": calls}), _chunk({}, "tool_calls")]
    else:
        text = step.text or ""
        out += [_chunk({"content": text[i : i + PIECE]}) for i in range(0, len(text), PIECE)]
        out.append(_chunk({}, "stop"))
    if usage:
        body = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
                "model": "scripted", "choices": [], "usage": USAGE}  # fmt: skip
        out.append(b"data: " + json.dumps(body).encode() + b"\n\n")
    return [*out, b"data: [DONE]\n\n"]


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_error(404, "only /v1/chat/completions is scripted")
            return
        step = next_step(request.get("messages") or [])
        if not request.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": step.text or ""}
            body = {"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
                    "model": "scripted",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": USAGE}  # fmt: skip
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        usage = bool((request.get("stream_options") or {}).get("include_usage"))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for piece in stream(step, usage):
            self.wfile.write(piece)
            self.wfile.flush()

    def log_message(self, *args: Any) -> None:  # quiet
        pass


def start(port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Serve in a daemon thread; returns the server and its base URL (…/v1)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=8765)
    port = p.parse_args().port
    print(f"scripted model at http://127.0.0.1:{port}/v1")
    ThreadingHTTPServer(("127.0.0.1", port), _Handler).serve_forever()
