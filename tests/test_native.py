"""The compiled replay (trajectory_review.native): used where `make` built it, the same
bytes out as its sources on every kind of input, and never used once a source changed."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import A, Q, Recorder
from tests.test_hostile_input import cited, hostile_traces
from trajectory_review.replay.project import replay_exchange
from trajectory_review.rules.lint import lint
from trajectory_review.rules.qa import exchange_sources, projected_text
from trajectory_review.rules.registry import load_rules
from trajectory_review.tools import otlp

ROOT = Path(__file__).resolve().parents[1]
ACTIVE = "import trajectory_review.model.matching, trajectory_review.native as n; print(n.active())"


def _run(args: list[str], native: bool, env: dict[str, str] | None = None) -> tuple[str, str]:
    env = {**os.environ, **(env or {}), "TRAJECTORY_CACHE": "off", "PYTHONIOENCODING": "utf-8"}
    if native:
        env.pop("TRAJECTORY_NATIVE", None)
    else:
        env["TRAJECTORY_NATIVE"] = "off"
    proc = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout, proc.stderr


def test_the_replay_runs_compiled_where_make_built_it():
    out, _ = _run(["-c", ACTIVE], native=True)
    assert out.strip() == "True", (
        "the replay runs from its sources: its compiled build is missing or older than "
        "they are (`make setup` builds it; scripts/build_native.py says why it could not)"
    )
    out, _ = _run(["-c", ACTIVE], native=False)
    assert out.strip() == "False"  # TRAJECTORY_NATIVE=off


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("corpora")
    generated = tmp / "generated"
    # more conversations than workers.PARALLEL_MIN: the compiled model in worker processes
    subprocess.run(
        [sys.executable, "-m", "trajectory_review", "generate", str(generated),
         "--conversations", "450", "--seed", "11"],
        check=True, capture_output=True,
    )  # fmt: skip
    hostile = tmp / "hostile"
    hostile.mkdir()
    hostile_traces(hostile / "t.jsonl")
    return [ROOT / "traces", hostile, generated]


# -- random histories: any shape a recorder (or an attacker) could write ----------------------

QUOTE = "Canopy cover is always acre-weighted for reporting."
TEXTS = [
    "",
    " ",
    "Canopy is 61%.",
    f"Canopy is 61%.\n\n<commons-citation>\n\nWhy.\n\n> {QUOTE}\n\n</commons-citation>",
    "<commons-citation>\n> unclosed",
    '<shiny-aside label="x">model-written</shiny-aside>',
    "`pkg.thing` maybe `other_name`, see https://example.org/a_(b)",
    "\u202e bidi override, \u0000 nul and \U0001f600",
    "(" * 300 + "_" * 300,
]


def _value(rng: random.Random, depth: int = 0) -> object:
    kinds = ["none", "bool", "int", "big", "float", "str"] + (["list", "dict"] if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "none":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.randint(-5, 5)
    if kind == "big":
        return rng.choice([2**64, -(2**70), 10**30])
    if kind == "float":
        return rng.choice([0.5, -1e300, 1e-7])
    if kind == "str":
        return rng.choice(TEXTS)
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "id", "type", "content"]): _value(rng, depth + 1) for _ in range(2)}


def _part(rng: random.Random) -> object:
    kind = rng.choice(["text", "text", "tool_call", "tool_call_response", "odd", "raw"])
    if kind == "text":
        return {"type": "text", "content": rng.choice([*TEXTS, 5, None, ["x"]])}
    if kind == "tool_call":
        return {
            "type": "tool_call",
            "id": rng.choice(["c1", "c2", 7, None]),
            "name": rng.choice(["run_sql", "calc", None, 3]),
            "arguments": _value(rng),
        }
    if kind == "tool_call_response":
        return {
            "type": "tool_call_response",
            "id": rng.choice(["c1", "c2", 7]),
            "response": _value(rng),
        }
    if kind == "odd":
        return {"type": rng.choice(["blob", "", 4, None]), "content": _value(rng)}
    return _value(rng)


def _message(rng: random.Random) -> object:
    role = rng.choice(["user", "assistant", "tool", "system", 7, None])
    shape = rng.random()
    if shape < 0.8:
        return {"role": role, "parts": [_part(rng) for _ in range(rng.randint(0, 3))]}
    if shape < 0.9:
        return {"role": role, "content": rng.choice([*TEXTS, 3])}
    return rng.choice([{"role": role, "parts": "not a list"}, "a string", 5, None])


def _record(rng: random.Random) -> dict[str, object]:
    """A turn span's record as no recorder writes it: a tag of any type, candidates that
    are not JSON, not a list, or a list of anything."""
    candidates = [
        rng.choice([{"quote": QUOTE, "status": "accepted", "label": _value(rng)}, _value(rng)])
        for _ in range(rng.randint(0, 3))
    ]
    return {
        "commons.provenance.tag": rng.choice(["A", 5, ["A"], {"x": 1}, True, 2.5, ""]),
        "commons.citation.candidates": rng.choice(
            [json.dumps(candidates), json.dumps(_value(rng)), 7, "not json ["]
        ),
    }


def random_traces(path: Path, seed: int, conversations: int = 120) -> Path:
    """Conversations of well-formed turns with random messages between, random records
    (a fifth of them of the wrong types altogether)."""
    rng = random.Random(seed)
    r = Recorder()
    for c in range(conversations):
        history: list = []
        for _ in range(rng.randint(1, 3)):
            history = [*history, Q(rng.choice(TEXTS[2:]))]
            history += [_message(rng) for _ in range(rng.randint(0, 3))]
            answer = A(rng.choice(TEXTS))
            decisions = [
                {
                    "quote": rng.choice([QUOTE, "other", 5]),
                    "status": rng.choice(["accepted", "rejected", "odd"]),
                    "label": rng.choice(['Guide" <b>', "Docs", None]),
                    "kind": rng.choice(["prose", "code", 1]),
                }
                for _ in range(rng.randint(0, 2))
            ]
            r.turn(
                f"c{c}",
                [*history, answer],
                tag=rng.choice(["A", "B", "C", None, "Z"]),
                decisions=decisions if rng.random() < 0.9 else None,
                raw_attrs=_record(rng) if rng.random() < 0.2 else None,
            )
            history = [*history, answer]
    # escaped as a recorder escaping a lone surrogate writes it
    lines = [json.dumps(otlp.envelope(r.spans[i : i + 3])) for i in range(0, len(r.spans), 3)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_compiled_replay_agrees_with_its_sources_on_random_histories(tmp_path, seed):
    src = str(random_traces(tmp_path / "t.jsonl", seed))
    for command in (["export", src], ["lint", src, "--json", "--fail-on", "never"]):
        args = ["-m", "trajectory_review", *command]
        compiled, python = _run(args, native=True), _run(args, native=False)
        assert compiled == python, command
        assert compiled[0]  # something came out: the corpus is not all dropped


@pytest.mark.parametrize("which", ["traces", "hostile", "generated"])
def test_the_compiled_replay_gives_the_same_bytes_as_its_sources(corpora, which):
    src = str(next(c for c in corpora if c.name == which))
    for command in (
        ["lint", src, "--json", "--fail-on", "never"],
        ["export", src],
        ["export", src, "--format", "csv"],
    ):
        args = ["-m", "trajectory_review", *command]
        compiled, python = _run(args, native=True), _run(args, native=False)
        assert compiled == python, command
    if which == "hostile":  # the dropped conversations say why, compiled too
        doc = json.loads(_run(["-m", "trajectory_review", "export", src], native=True)[0])
        assert doc["stats"]["dropped_conversations"] == 2


def test_a_replay_edited_since_its_build_runs_from_its_sources(tmp_path):
    # the package as a developer leaves it after an edit, before `make` rebuilds
    shutil.copytree(ROOT / "src" / "trajectory_review", tmp_path / "trajectory_review")
    edited = tmp_path / "trajectory_review" / "model" / "messages.py"
    edited.write_text(edited.read_text() + "\n# edited after the build\n")
    out, _ = _run(["-c", ACTIVE], native=True, env={"PYTHONPATH": str(tmp_path)})
    assert out.strip() == "False"
    # unedited, the same copy is served compiled: the digest, not the folder, decides
    edited.write_text(edited.read_text().removesuffix("\n# edited after the build\n"))
    out, _ = _run(["-c", ACTIVE], native=True, env={"PYTHONPATH": str(tmp_path)})
    assert out.strip() == "True"


@pytest.mark.parametrize(
    "manifest",
    ["{not json", '{"sources": 1}', '{"sources": null, "files": []}', "[]", ""],
)
def test_an_unreadable_build_manifest_means_the_sources(tmp_path, manifest):
    build = tmp_path / "trajectory-review-native"
    build.mkdir()
    (build / "manifest.json").write_text(manifest)
    script = f"import sys; sys.prefix = {str(tmp_path)!r}; {ACTIVE}"
    out, err = _run(["-c", script], native=True)
    assert out.strip() == "False" and err == ""


def test_what_the_replay_builds_crosses_to_a_worker_process_and_back(read):
    # a compiled frozen dataclass cannot be unpickled (native.py): every value the
    # replay builds, compiled or not, must survive the trip a batch makes to a worker
    r = Recorder()
    text, decisions = cited()
    r.turn("c1", [Q("how much canopy?"), A(text)], tag="B", decisions=decisions)
    conversation = read(r).conversation("c1")
    exchange = conversation.exchanges[0]
    replay = replay_exchange(exchange)
    cfg = load_rules()
    verdict = lint(projected_text(replay), exchange_sources(exchange), cfg)
    for value in (conversation, exchange, replay, cfg, verdict, verdict.results[0]):
        back = pickle.loads(pickle.dumps(value))
        assert back == value and type(back) is type(value)
