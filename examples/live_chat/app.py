"""A live commons chat, recorded for review.

A commons agent over a small table of forest plots: one governed measure
(`canopy_cover`, answers tagged A), `run_sql` for everything else (B when a citation
verifies, C when none does), and a context layer of prose to cite. The model is the
scripted one in model_server.py (no network, no key): started here on 127.0.0.1 unless
LIVE_CHAT_MODEL_URL names one. Every answer is recorded by trajectory-review's recorder
into COMMONS_TRACES_DIR (default: traces/ beside this file), which
`trajectory-review serve` reads as it is.

    pip install "trajectory-review[record]"
    shiny run examples/live_chat/app.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import chatlas
import commons
import pandas as pd
import shinychat
from commons import ui as commons_ui
from pydantic import Field
from shiny import App, Inputs, Outputs, Session
from shinychat.types import HistoryOptions

from trajectory_review.record import record

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the script and the scripted model beside this file
import model_server  # noqa: E402

os.environ.setdefault("COMMONS_TRACES_DIR", str(HERE / "traces"))
MODEL_URL = os.environ.get("LIVE_CHAT_MODEL_URL") or model_server.start()[1]

PLOTS = pd.DataFrame(
    {
        "plot_id": ["N-1", "N-2", "N-3", "S-1", "S-2", "S-3"],
        "region": ["North", "North", "North", "South", "South", "South"],
        "year": [2016, 2019, 2021, 2012, 2018, 2022],
        "canopy_cover": [50.0, 60.0, 70.0, 20.0, 30.0, 40.0],
        "acres": [10.0, 30.0, 40.0, 5.0, 20.0, 15.0],
    }
)


@commons.measure(title="Canopy cover by region")
def canopy_cover(
    region: Annotated[str, Field(description="North or South")],
) -> float:
    """Acre-weighted canopy cover (percent) of one region's plots: the team's
    definition of a region's cover."""
    rows = PLOTS[PLOTS["region"] == region]
    return round(float((rows["canopy_cover"] * rows["acres"]).sum() / rows["acres"].sum()), 1)


def make_agent() -> commons.Commons:
    client = chatlas.ChatOpenAICompletions(base_url=MODEL_URL, api_key="scripted", model="scripted")
    return commons.Commons(
        client,
        commons.data_source(plots=PLOTS),
        commons.semantic_layer(canopy_cover),
        commons.context_layer([HERE / "context" / "reporting.md"]),
    )


page = shinychat.page_chat("Forest plots", id="chat", theme=commons_ui.theme())


def server(input: Inputs, output: Outputs, session: Session) -> None:
    # one agent per session, as commons.ui.server asks; record() is the one added line
    agent = record(make_agent())
    commons_ui.server("chat", agent, history=HistoryOptions(restore_mode="url"))


app = App(page, server)
