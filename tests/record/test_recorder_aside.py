"""The recorder beside others (issues #44, #46): its files private to the recording user,
one warning for a plain http endpoint, and stepping aside when commons records itself."""

from __future__ import annotations

import subprocess

from tests.fixtures import attrs, in_the_chat, record_python, recorded

PRIVATE_FILES = """
import os, sys, stat
from pathlib import Path
from trajectory_review.record.export import RotatingFileExporter
folder = Path(sys.argv[1]) / "traces"
folder.mkdir(mode=0o755)
os.chmod(folder, 0o755)
outside = Path(sys.argv[1]) / "outside.txt"
outside.write_text("keep")
(folder / "trace-1.jsonl").symlink_to(outside)  # planted under the first name
a, b = RotatingFileExporter(folder), RotatingFileExporter(folder)
print(oct(stat.S_IMODE(folder.stat().st_mode)), oct(stat.S_IMODE(a.path.stat().st_mode)),
      a.path.name, b.path.name, outside.read_text(), flush=True)
"""


def test_trace_files_are_private_new_and_never_reached_through_a_link(tmp_path):
    done = subprocess.run([record_python(), "-c", PRIVATE_FILES, str(tmp_path)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    folder_mode, file_mode, first, second, outside = done.stdout.split()
    assert (folder_mode, file_mode) == ("0o700", "0o600")
    assert first != second and "trace-1.jsonl" not in (first, second)
    assert outside == "keep" and (tmp_path / "traces" / "trace-1.jsonl").is_symlink()
    assert "now 0700" in done.stderr


def test_a_plain_http_endpoint_off_this_machine_gets_one_warning_line(tmp_path):
    probe = (
        "import logging; logging.basicConfig();"
        "from trajectory_review.record.export import exporter_for;"
        "exporter_for('http://127.0.0.1:4318'); exporter_for('https://collector.invalid');"
        "exporter_for('http://qa:pw@collector.invalid:4318')"  # made, never sent to
    )
    done = subprocess.run([record_python(), "-c", probe], capture_output=True, text=True,
                          check=True, cwd=tmp_path)  # fmt: skip
    lines = [ln for ln in done.stderr.splitlines() if "unencrypted" in ln]
    assert len(lines) == 1 and "http://collector.invalid:4318" in lines[0]
    assert "pw" not in done.stderr


SELF_RECORDING = """
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
import app
from script import ASKED
from opentelemetry import trace
from trajectory_review.record import flush, record
agent = app.make_agent()
own = trace.get_tracer("co.posit.python-package.commons")
original = agent.stream_async
async def as_commons_records_itself(*args, **kwargs):
    async def answer():
        with own.start_as_current_span("commons_conversation_turn",
                                       attributes={"gen_ai.conversation.id": "self-recorded"}):
            async for chunk in await original(*args, **kwargs):
                yield chunk
            with own.start_as_current_span("commons_provenance", attributes={
                    "commons.provenance.tag": "C", "commons.citation.candidates": "[]"}):
                pass
    return answer()
agent.stream_async = as_commons_records_itself
agent = record(agent)
agent.conversation_id = "self-recorded"
async def ask():
    for q in ASKED[:3]:
        async for _ in await agent.stream_async(q, content="all"):
            pass
asyncio.run(ask())
flush()
"""


def test_the_recorder_steps_aside_when_commons_records_itself(tmp_path):
    proc = in_the_chat(SELF_RECORDING, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [ln for ln in proc.stderr.splitlines() if "records its own turns" in ln]
    assert len(said) == 1
    spans = recorded(tmp_path / "traces")
    ours = [s for s in spans if "trajectory_review.recorder" in attrs(s)]
    # the first turn had begun when commons' own span showed: its turn span, no record
    assert [s["name"] for s in ours] == ["commons_conversation_turn"]
    assert "commons.provenance.tag" not in attrs(ours[0])
    theirs = [s for s in spans if s["name"] == "commons_provenance"]
    assert len(theirs) == 3 and all("trajectory_review.recorder" not in attrs(s) for s in theirs)
    from trajectory_review.model.reader import TraceReader

    conv = TraceReader.open([str(tmp_path / "traces")]).conversation("self-recorded")
    assert [ex.tag for ex in conv.exchanges] == ["C", "C", "C"]  # each answer once, commons'
