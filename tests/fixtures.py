"""Small OTLP fixtures built in the tests: a recorder that writes what `commons` writes."""

from __future__ import annotations

import gzip
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajectory_review_bench import otlp
from trajectory_review_bench.otlp import msg, text, tool_call, tool_result

BASE_NS = 1_767_225_600_000_000_000


def Q(s: str) -> dict[str, Any]:
    return msg("user", text(s))


def A(s: str) -> dict[str, Any]:
    return msg("assistant", text(s))


def CALL(call_id: str, name: str, args: Any) -> dict[str, Any]:
    return msg("assistant", tool_call(call_id, name, args))


def RESULT(call_id: str | None, response: Any) -> dict[str, Any]:
    return msg("tool", tool_result(call_id, response))


@dataclass(frozen=True)
class Provenance:
    """A `commons_provenance` span of a turn: its record, when it started and ended
    (seconds after the turn's start), and whether it sits below the agent span rather
    than directly below the turn."""

    tag: str | None
    decisions: list[dict[str, Any]] | None = None
    start_s: int = 0
    end_s: int = 1
    under_agent: bool = False


class Recorder:
    """Builds spans the way the live assistant records them."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._t = BASE_NS

    def _id(self, width: int = 16) -> str:
        return f"{next(self._ids):0{width}x}"

    def _tick(self, seconds: int = 1) -> int:
        self._t += seconds * 1_000_000_000
        return self._t

    def turn(
        self,
        conversation_id: str,
        *rounds: list[dict[str, Any]],
        tag: str | None = None,
        decisions: list[dict[str, Any]] | None = None,
        trace_id: str | None = None,
        raw_attrs: dict[str, Any] | None = None,
        system: str | None = "You answer questions about the forest inventory.",
        chat_conversation_id: str | None = None,
        provenance: list[Provenance] | None = None,
    ) -> str:
        """One answered turn: a turn span, an invoke_agent span, one chat span per round,
        and any `commons_provenance` spans below the turn (today's commons).

        Each round is the whole history that chat call saw plus its output (the last
        message)."""
        trace_id = trace_id or self._id(32)
        turn_id = self._id()
        agent_id = self._id()
        start = self._tick()
        chats = [self._chat(trace_id, agent_id, h, system, chat_conversation_id) for h in rounds]
        end = self._tick()
        attrs = otlp.turn_attrs(conversation_id, tag, decisions)
        attrs.update(raw_attrs or {})
        self.spans.append(otlp.span(trace_id, turn_id, otlp.TURN_SPAN, start, end, attrs=attrs))
        self.spans.append(otlp.span(trace_id, agent_id, "invoke_agent", start, end, parent=turn_id))
        self.spans.extend(chats)
        for p in provenance or []:
            parent = agent_id if p.under_agent else turn_id  # nested deeper, or a child
            span = otlp.span(
                trace_id, self._id(), otlp.PROVENANCE_SPAN, start + p.start_s * 10**9,
                start + p.end_s * 10**9, parent=parent,
                attrs=otlp.turn_attrs(conversation_id, p.tag, p.decisions),
            )  # fmt: skip
            del_key = "gen_ai.conversation.id"  # commons sets it on the turn only
            span["attributes"] = [a for a in span["attributes"] if a["key"] != del_key]
            self.spans.append(span)
        return trace_id

    def bare_chat(
        self,
        history: list[dict[str, Any]],
        trace_id: str | None = None,
        parent: str | None = "",
        conversation_id: str | None = None,
        system: str | None = None,
    ) -> str:
        trace_id = trace_id or self._id(32)
        self.spans.append(self._chat(trace_id, parent, history, system, conversation_id))
        return trace_id

    def _chat(
        self,
        trace_id: str,
        parent: str | None,
        history: list[dict[str, Any]],
        system: str | None,
        conversation_id: str | None,
    ) -> dict[str, Any]:
        """A chat span: it saw history[:-1] and answered history[-1]."""
        s, e = self._tick(), self._tick()
        attrs = otlp.chat_attrs(
            history[:-1],
            history[-1:],
            system=system,
            conversation_id=conversation_id,
            usage=(100, 20),
        )
        return otlp.span(
            trace_id, self._id(), "chat claude-sonnet", s, e, parent=parent, attrs=attrs, kind=3
        )

    def write(self, path: Path, per_line: int = 3, extra_lines: list[str] | None = None) -> Path:
        lines = [
            otlp.line(self.spans[i : i + per_line]) for i in range(0, len(self.spans), per_line)
        ]
        lines.extend(extra_lines or [])
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


def span_lines(folder: Path) -> list[str]:
    """The generator's traces as Connect stores them: one span per OTLP/JSON line."""
    out = []
    for f in sorted(folder.rglob("*.jsonl*")):
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    env = json.loads(line)
                except ValueError:
                    continue
                for rs in env["resourceSpans"]:
                    for ss in rs["scopeSpans"]:
                        for sp in ss["spans"]:
                            one = {"resource": rs.get("resource", {}), "scopeSpans": [
                                {"scope": ss.get("scope", {}), "spans": [sp]}
                            ]}  # fmt: skip
                            out.append(json.dumps({"resourceSpans": [one]}))
    return list(dict.fromkeys(out))


def generated(conversations: int, seed: int) -> Path:
    """The generated corpus of `conversations` for `seed`, written once and kept between
    test runs (outside the checkout) under the digest of what the generator writes with:
    an edit to it makes a new corpus. Read-only for the tests that use it. A test process
    asking for a corpus another one is writing waits for it (on a clean machine both
    workers could otherwise write the same corpus at once, each paying for it); a corpus is removed
    only once no run has used it for a week (another checkout's run may be using it)."""
    import fcntl
    import hashlib
    import os
    import shutil
    import tempfile
    import time

    import trajectory_review
    import trajectory_review_bench
    from trajectory_review_bench import generate

    # the generator, and the scanner and display table it writes answers with
    package = Path(trajectory_review.__file__).parent
    bench = Path(trajectory_review_bench.__file__).parent
    inputs = [
        *(bench / f for f in ("generate.py", "answers.py", "rule_answers.py", "otlp.py")),
        *sorted(package.glob("replay/*.py")),
        package / "model" / "provenance.py",
    ]  # fmt: skip
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in inputs)).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = base / "trajectory-review-tests" / "corpora"
    target = root / f"{digest}-{seed}-{conversations}"
    if (target / "done").exists():
        (target / "done").touch()  # in use: kept
        return target / "traces"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (target / "done").exists():  # written by the process this one waited for
            return target / "traces"
        week = time.time() - 7 * 86400
        for old in root.iterdir():
            done = old / "done"
            unused = done.exists() and done.stat().st_mtime < week
            abandoned = old.name.startswith(".partial-") and old.stat().st_mtime < week
            if unused or abandoned:  # a run killed while writing leaves a partial copy
                shutil.rmtree(old, ignore_errors=True)
            elif old.suffix == ".lock" and old.stat().st_mtime < week:  # opened = touched
                old.unlink(missing_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=root, prefix=".partial-"))
        generate.generate(scratch / "traces", conversations=conversations, seed=seed)
        (scratch / "done").touch()
        try:
            scratch.rename(target)
        except OSError:  # another checkout's run got there first: its copy is the same
            shutil.rmtree(scratch, ignore_errors=True)
    return target / "traces"


def qa_traces(tmp_path: Path) -> Path:
    """Two answers for the reply rules: a governed one that praises the question, and an
    uncited fallback with a malformed citation."""
    r = Recorder()
    r.turn(
        "c1",
        [
            Q("How is canopy reported?"),
            CALL("t1", "call_measure", {"m": "canopy"}),
            RESULT("t1", '{"value": 0.6}'),
            A("Great question! Canopy cover is 60%, acre-weighted as the guide says."),
        ],
        tag="A",
    )
    r.turn(
        "c2",
        [
            Q("And mortality?"),
            A(
                "<commons-citation>\n> quote\n</commons-citation>Mortality is a share of "
                "stems that died since the previous visit."
            ),
        ],
        tag=None,
    )
    r.turn("c3", [Q("Unfinished"), CALL("t2", "run_sql", {"sql": "x"})], tag=None)
    return r.write(tmp_path / "t.jsonl")


def export(capsys, *sources: str) -> dict:
    """`export` of these sources, its document, with what it said on stderr."""
    from trajectory_review.tools.cli import main

    assert main(["export", *sources]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    doc["stderr"] = out.err
    return doc


def without_one_decision(traces: Path, out: Path) -> Path:
    """A copy of a recorded folder whose record lost one decision: on every span, the
    first accepted citation of `commons.citation.candidates` is dropped. The mutation
    the recorder's tests must catch (a recorder that leaves a decision out)."""
    out.mkdir(parents=True, exist_ok=True)
    for path in traces.glob("trace-[0-9]*.jsonl"):
        lines = []
        for line in path.read_text().splitlines():
            doc = json.loads(line)
            for rs in doc["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        for a in span.get("attributes", []):
                            if a["key"] != "commons.citation.candidates":
                                continue
                            kept = json.loads(a["value"]["stringValue"])
                            accepted = [d for d in kept if d["status"] == "accepted"]
                            if accepted:
                                kept.remove(accepted[0])
                            a["value"]["stringValue"] = json.dumps(kept)
            lines.append(json.dumps(doc))
        (out / path.name).write_text("\n".join(lines) + "\n")
    return out


def record_python() -> str:
    """The Python of the live commons chat's venv (`make` builds .venv-record; the
    reviewer's venv never has commons or chatlas). TRAJECTORY_RECORD_PYTHON overrides."""
    import os

    root = Path(__file__).resolve().parents[1]
    python = os.environ.get("TRAJECTORY_RECORD_PYTHON") or str(
        root / ".venv-record" / "bin" / "python"
    )
    assert Path(python).exists(), f"{python} is missing: run `make .venv-record/.installed`"
    return python


def until(done: Callable[[], object], seconds: float = 120, what: str = "not in time") -> None:
    """Wait until `done()` is true, failing with `what` after `seconds`: a wait for an
    event, never a fixed sleep."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def in_the_chat(probe: str, tmp_path: Path):
    """Run `probe` in the live chat's venv, with the example app importable and its
    traces folder in tmp_path/traces."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [record_python(), "-c", probe, str(root / "examples" / "live_chat")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "COMMONS_TRACES_DIR": str(tmp_path / "traces")},
    )  # fmt: skip


def recorded(traces: Path) -> list[dict]:
    """The commons_provenance spans, in the order they ended."""
    spans = []
    for path in sorted(traces.glob("trace-[0-9]*.jsonl")):
        for line in path.read_text().splitlines():
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        span["scope"] = ss["scope"]["name"]
                        spans.append(span)
    return spans


def attrs(span: dict) -> dict:
    out = {}
    for a in span.get("attributes", []):
        out[a["key"]] = next(iter(a["value"].values()))
    return out
