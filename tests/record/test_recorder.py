"""The recorder for Python commons agents (trajectory_review.record): what it writes is
what commons decided for the stream the user saw, and the reviewer reads it as it was.

Each test drives the example chat (examples/live_chat: a real commons agent, chatlas,
the scripted OpenAI-compatible model on 127.0.0.1) in a child process, since an
OpenTelemetry tracer provider is set once per process."""

from __future__ import annotations

import gzip
import html
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fixtures import (
    attrs,
    export,
    in_the_chat,
    record_python,
    recorded,
    without_one_decision,
)

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("live_driver.py")
sys.path.insert(0, str(ROOT / "examples" / "live_chat"))
from script import ASKED, SCRIPT  # noqa: E402

ASIDE = re.compile(r'<shiny-aside label="([^"]*)"[^>]*>(.*?)</shiny-aside>', re.S)
LIVE_PILLS = {"Verified answer": "A", "Untrusted": "C"}  # commons shows no pill for B live


def drive(tmp_path: Path, *extra: str, env: dict | None = None) -> list[dict]:
    out = tmp_path / "streamed.json"
    proc = subprocess.run(
        [record_python(), str(DRIVER), str(tmp_path / "traces"), str(out), *extra],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> tuple[Path, list[dict]]:
    tmp = tmp_path_factory.mktemp("live")
    return tmp / "traces", drive(tmp)


def streamed_markers(text: str) -> tuple[list[tuple[str, str]], str | None]:
    """The citation asides (label, quote) and the provenance tag the user was shown."""
    citations, tag = [], None
    for label, body in ASIDE.findall(text):
        if "commons-provenance-info" in body:
            tag = LIVE_PILLS[html.unescape(label)]
        else:
            quote = "\n".join(line[2:] for line in body.splitlines() if line.startswith("> "))
            citations.append((html.unescape(label), quote))
    return citations, tag


def model_citations(question: str) -> int:
    """How many citation blocks the scripted model wrote for this question."""
    return sum(step.text.count("\n<commons-citation>") for step in SCRIPT[question] if step.text)


def test_every_answer_records_the_decisions_and_tag_the_user_was_shown(live):
    traces, answers = live
    spans = recorded(traces)
    provenance = sorted(
        (s for s in spans if s["name"] == "commons_provenance"),
        key=lambda s: int(s["startTimeUnixNano"]),
    )
    assert len(provenance) == len(answers) == len(ASKED)
    for answer, span in zip(answers, provenance, strict=True):
        record = attrs(span)
        decisions = json.loads(record["commons.citation.candidates"])
        citations, live_tag = streamed_markers(answer["streamed"])
        accepted = [(d["label"], d["quote"]) for d in decisions if d["status"] == "accepted"]
        assert accepted == citations, answer["question"]
        assert len(decisions) == model_citations(answer["question"]), answer["question"]
        tag = record.get("commons.provenance.tag")
        if live_tag is not None:
            assert tag == live_tag, answer["question"]
        else:  # no pill: no tool ran (no claim), or B (commons omits "Cited" live)
            assert tag is None or (tag == "B" and citations), answer["question"]
        assert span["scope"] == "co.posit.python-package.commons"


def test_chat_spans_nest_under_the_turn_that_carries_the_conversation(live):
    traces, _ = live
    spans = recorded(traces)
    by_id = {s["spanId"]: s for s in spans}
    turns = [s for s in spans if s["name"] == "commons_conversation_turn"]
    assert len(turns) == len(ASKED)
    for turn in turns:
        assert attrs(turn)["gen_ai.conversation.id"] == "live-conversation-1"
    chats = [s for s in spans if attrs(s).get("gen_ai.operation.name") == "chat"]
    assert chats
    for chat in chats:
        parent, names = chat.get("parentSpanId"), []
        while parent:
            names.append(by_id[parent]["name"])
            parent = by_id[parent].get("parentSpanId")
        assert names[-1] == "commons_conversation_turn", names
        assert "invoke_agent" in names
        assert "gen_ai.input.messages" in attrs(chat)  # content capture is on


def test_the_reviewer_reads_the_folder_with_every_answer_tagged_as_it_was_live(live, capsys):
    traces, answers = live
    assert (traces / "trace-latest.jsonl").samefile(traces / "trace-1.jsonl")
    (conversation,) = export(capsys, str(traces))["conversations"]
    exchanges = conversation["exchanges"]
    assert [e["question"] for e in exchanges] == ASKED
    for answer, exchange in zip(answers, exchanges, strict=True):
        citations, live_tag = streamed_markers(answer["streamed"])
        if live_tag is not None:
            assert exchange["provenance_tag"] == live_tag
        accepted = [
            (d["label"], d["quote"])
            for d in exchange["citation_decisions"]
            if d["status"] == "accepted"
        ]
        assert accepted == citations
    lint = subprocess.run(
        [sys.executable, "-m", "trajectory_review", "lint", str(traces), "--json",
         "--fail-on", "never"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert lint.returncode == 0, lint.stderr
    assert len(json.loads(lint.stdout)["answers"]) == len(ASKED)


def test_a_recorder_that_drops_a_decision_is_caught(live, tmp_path, capsys):
    # the mutation the proof must catch: one decision missing from the record
    traces, answers = live
    mutated = without_one_decision(traces, tmp_path / "traces")
    (conversation,) = export(capsys, str(mutated))["conversations"]
    shown = [
        [d for d in e["citation_decisions"] if d["status"] == "accepted"]
        for e in conversation["exchanges"]
    ]
    live_shown = [streamed_markers(a["streamed"])[0] for a in answers]
    assert [len(s) for s in shown] != [len(s) for s in live_shown]


def test_content_capture_is_switched_on_and_a_setting_that_turns_it_off_is_named(tmp_path):
    probe = (
        "import os, logging; logging.basicConfig(format='%(message)s');"
        "from trajectory_review.record.export import capture_content, CAPTURE;"
        "capture_content(); print(os.environ.get(CAPTURE))"
    )
    capture = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    unset = {k: v for k, v in os.environ.items() if k != capture}
    on = subprocess.run([record_python(), "-c", probe], capture_output=True, text=True, env=unset)
    assert on.stdout.strip() == "true" and on.stderr == ""
    off = subprocess.run(
        [record_python(), "-c", probe], capture_output=True, text=True,
        env={**unset, capture: "false"},
    )  # fmt: skip
    assert off.stdout.strip() == "false"
    assert off.stderr.count("\n") == 1 and "without their messages" in off.stderr


def test_files_rotate_as_commons_writes_them(tmp_path):
    probe = (
        "import sys; from trajectory_review.record.export import RotatingFileExporter;"
        "from opentelemetry.sdk.trace import TracerProvider;"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor;"
        "p = TracerProvider(); e = RotatingFileExporter(sys.argv[1], max_bytes=1);"
        "p.add_span_processor(SimpleSpanProcessor(e)); t = p.get_tracer('t');"
        "[t.start_span(f's{i}').end() for i in range(3)]; p.shutdown()"
    )
    for _ in range(2):  # a second process starts a file of its own
        subprocess.run([record_python(), "-c", probe, str(tmp_path)], check=True)
    names = sorted(p.name for p in tmp_path.iterdir())
    numbered = [n for n in names if re.fullmatch(r"trace-\d+\.jsonl", n)]
    assert len(numbered) == 6 and "trace-latest.jsonl" in names
    newest = max(numbered, key=lambda n: int(n[6:-6]))
    assert (tmp_path / "trace-latest.jsonl").samefile(tmp_path / newest)
    from trajectory_review.sources import trace_files

    # trace-latest.jsonl is the newest file under another name: read once
    assert len(trace_files([str(tmp_path)])) == 6


class _Collector(BaseHTTPRequestHandler):
    received: list[bytes] = []
    headers_seen: list[dict[str, str]] = []

    def do_POST(self) -> None:
        type(self).headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        type(self).received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


DECODE = (
    "import json, sys; from opentelemetry.proto.collector.trace.v1.trace_service_pb2 "
    "import ExportTraceServiceRequest as R; print(json.dumps([s.name for f in sys.argv[1:] "
    "for rs in R.FromString(open(f, 'rb').read()).resource_spans "
    "for ss in rs.scope_spans for s in ss.spans]))"
)


def test_spans_go_to_an_otlp_http_collector(tmp_path):
    """...and the environment's exporter headers (credentials for the environment's own
    endpoint) never go to an endpoint named with `to`."""
    _Collector.received, _Collector.headers_seen = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    secret = {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20env-secret",
              "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-api-key=env-secret"}  # fmt: skip
    try:
        drive(tmp_path, "--to", f"http://127.0.0.1:{server.server_address[1]}", env=secret)
    finally:
        server.shutdown()
    assert _Collector.headers_seen
    for seen in _Collector.headers_seen:
        assert "authorization" not in seen and "x-api-key" not in seen
        assert "env-secret" not in json.dumps(seen)
    bodies = []
    for n, (path, body) in enumerate(_Collector.received):
        assert path == "/v1/traces"
        bodies.append(tmp_path / f"request-{n}.pb")
        bodies[-1].write_bytes(body)
    # decoded with the protobuf classes of the recorder's own venv
    decoded = subprocess.run(
        [record_python(), "-c", DECODE, *map(str, bodies)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    names = json.loads(decoded.stdout)
    assert names.count("commons_provenance") == len(ASKED)
    assert names.count("commons_conversation_turn") == len(ASKED)
    assert not (tmp_path / "traces").exists()  # nothing written to files


def test_record_refuses_what_it_cannot_record_faithfully(tmp_path):
    probe = (
        "import chatlas, commons._agent as a; del a.CitationScanner;"
        "import sys; sys.path.insert(0, sys.argv[1]); import app;"
        "from trajectory_review.record import record, RecorderError\n"
        "try:\n    record(app.make_agent())\nexcept RecorderError as e:\n    print(e)\n"
        "try:\n    record(chatlas.ChatOpenAICompletions(api_key='x', model='m'))\n"
        "except RecorderError as e:\n    print(e)"
    )
    proc = in_the_chat(probe, tmp_path)
    first, second = proc.stdout.strip().splitlines()
    assert "no commons._agent.CitationScanner" in first and "0.1.0b2" in first
    assert "takes a commons agent, not Chat" in second


def test_an_apps_own_tracer_provider_is_kept(tmp_path):
    # a team that already exports its spans somewhere keeps doing so: no folder appears
    probe = """
import asyncio, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
mine = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(mine))
trace.set_tracer_provider(provider)
sys.path.insert(0, sys.argv[1])
import app
from script import GOVERNED
from trajectory_review.record import record
agent = record(app.make_agent())
async def ask():
    async for _ in await agent.stream_async(GOVERNED, content="all"):
        pass
asyncio.run(ask())
print(sorted({s.name for s in mine.get_finished_spans()} & {
    "commons_conversation_turn", "commons_provenance"}))
"""
    proc = in_the_chat(probe, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "['commons_conversation_turn', 'commons_provenance']"
    assert not (tmp_path / "traces").exists()


def test_a_stream_the_user_stopped_is_recorded_without_a_tag(tmp_path):
    # the stop button: commons never classified the answer and showed no pill, so the
    # record must claim nothing (and still say which citations had been decided)
    probe = """
import asyncio, json, os, sys
sys.path.insert(0, sys.argv[1])
import app
from script import CITED
from trajectory_review.record import flush, record
agent = record(app.make_agent())
async def ask():
    stream = await agent.stream_async(CITED, content="all")
    shown = ""
    async for chunk in stream:
        shown += chunk if isinstance(chunk, str) else ""
        if "South 2." in shown:  # stopped before the first citation
            break
    await stream.aclose()
asyncio.run(ask())
flush()
"""
    proc = in_the_chat(probe, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (span,) = [s for s in recorded(tmp_path / "traces") if s["name"] == "commons_provenance"]
    record = attrs(span)
    assert "commons.provenance.tag" not in record
    assert json.loads(record["commons.citation.candidates"]) == []  # none reached yet
