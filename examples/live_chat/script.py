"""The fixed script the scripted model answers (model_server.py), one entry per
question: its steps are tool calls, then the answer text. Every case the fidelity proof
walks through (tests/browser/test_fidelity.py) is one entry here."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

TITLE_INSTRUCTIONS = "You title chat conversations."


@dataclass(frozen=True)
class Step:
    tool: str | None = None
    args: tuple[tuple[str, Any], ...] = ()
    text: str | None = None

    @property
    def args_json(self) -> str:
        return json.dumps(dict(self.args))

    @property
    def call_id(self) -> str:
        return f"call_{zlib.crc32(f'{self.tool}{self.args_json}'.encode()):08x}"


def call(tool: str, **args: Any) -> Step:
    return Step(tool=tool, args=tuple(args.items()))


def say(text: str) -> Step:
    return Step(text=text)


def cite(quote: str, why: str) -> str:
    return f"\n<commons-citation>\n{why}\n> {quote}\n</commons-citation>\n"


ACRES = "Canopy cover is always acre-weighted for reporting."
PROTOCOL = "Plots sampled before 2015 use the old protocol and are excluded from trend reports."
SINCE_2015 = (
    "SELECT region, count(*) AS plots FROM plots WHERE year >= 2015 GROUP BY region ORDER BY region"
)
BY_REGION = (
    "SELECT region, round(sum(canopy_cover * acres) / sum(acres), 1) AS cover "
    "FROM plots GROUP BY region ORDER BY region"
)

GOVERNED = "What is the acre-weighted canopy cover in the North region?"
CITED = "How many plots were sampled in each region since 2015?"
UNCITED = "What is the largest plot?"
MALFORMED = "Which region has the densest canopy?"
SPOOF = "Is this answer verified?"
LOOP = "Compare canopy cover between the regions, step by step."
LONG = "Show me the query and a table of cover by region."
ARTIFACT = "Write me a short report on canopy cover."
EDITED = "What is the smallest plot?"  # UNCITED, edited: a sibling branch

SCRIPT: dict[str, list[Step]] = {
    GOVERNED: [
        call("call_measure", name="canopy_cover", arguments=json.dumps({"region": "North"})),
        say("The acre-weighted canopy cover in the North region is **62.5%**."),
    ],
    CITED: [
        call("run_sql", sql=SINCE_2015),
        say(
            "Since 2015 the North has 3 plots and the South 2."
            + cite(PROTOCOL, "Older plots are left out of the count.")
            + "Every region is surveyed each year."
            + cite("Every region is surveyed every single year.", "The survey is annual.")
            + "So the counts are comparable."
        ),
    ],
    UNCITED: [
        call("run_sql", sql="SELECT plot_id, acres FROM plots ORDER BY acres DESC LIMIT 1"),
        say("The largest plot is **N-3**, at 40 acres."),
    ],
    MALFORMED: [
        call("run_sql", sql=BY_REGION),
        say(
            "The North has the densest canopy."
            "\n<commons-citation>\nThis citation has no quoted evidence at all.\n"
            "</commons-citation>\n"
            "The South follows."
        ),
    ],
    SPOOF: [
        say(
            "Yes, fully verified."
            '<shiny-aside label="Verified answer">This answer comes from a trusted '
            "calculation.</shiny-aside> Trust me."
        ),
    ],
    LOOP: [
        call("describe_table", table="plots"),
        call("run_sql", sql="SELECT DISTINCT region FROM plots ORDER BY region"),
        call("run_sql", sql=BY_REGION),
        say(
            "Weighted by acres, the North's cover is 62.5% and the South's 35.0%."
            + cite(ACRES, "Cover is weighted by plot area.")
            + "The North is denser."
        ),
    ],
    LONG: [
        call("run_sql", sql=BY_REGION),
        say(
            "Here is the query I ran:\n\n```sql\n" + BY_REGION + "\n```\n\n"
            "| region | cover |\n|---|---|\n| North | 62.5 |\n| South | 35.0 |\n"
            + cite(ACRES, "The table weights cover by acres.")
            + "\nThe same query, written for the trend report, keeps only the new "
            "protocol:\n\n```sql\nSELECT region FROM plots WHERE year >= 2015\n```\n\n"
            "Nothing else changes."
        ),
    ],
    ARTIFACT: [
        call("call_measure", name="canopy_cover", arguments=json.dumps({"region": "South"})),
        say(
            "I wrote the report as a document.\n"
            '<artifact id="canopy-report" title="Canopy cover report">\n'
            "# Canopy cover\n\nThe South's acre-weighted cover is 35.0%.\n"
            "</artifact>\n"
            "Open it from the chip."
        ),
    ],
    EDITED: [
        call("run_sql", sql="SELECT plot_id, acres FROM plots ORDER BY acres LIMIT 1"),
        say("The smallest plot is **S-1**, at 5 acres."),
    ],
}

# The order the proof asks them in; EDITED replaces UNCITED by editing it.
ASKED = [GOVERNED, CITED, UNCITED, MALFORMED, SPOOF, LOOP, LONG, ARTIFACT]
