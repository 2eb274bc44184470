"""What every session shares: the index, the answer catalog and the review log.

Built once per process (not per session); sessions only read it, each through its own
DuckDB cursor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..catalog import Catalog
from ..qa import default_rules_path
from ..reader import TraceReader
from ..reviews import ReviewLog, default_review_log
from ..rules import RuleConfig, load_rules
from ..sources import SourceError, default_sources


@dataclass
class AppData:
    reader: TraceReader | None
    catalog: Catalog | None
    reviews: ReviewLog
    sources: list[str]
    rules: RuleConfig
    error: str | None = None


@lru_cache(maxsize=1)
def load_app_data() -> AppData:
    sources = default_sources()
    reviews = ReviewLog(default_review_log(sources))
    rules = load_rules(default_rules_path())  # a bad rules file stops the start, loudly
    try:
        reader = TraceReader.open(sources)
        catalog = Catalog.build(reader, rules)
    except SourceError as exc:
        # The app still starts and says what is wrong, instead of a traceback.
        return AppData(None, None, reviews, sources, rules, str(exc))
    return AppData(reader, catalog, reviews, sources, rules)


def static_dir() -> Path:
    env = os.environ.get("TRAJECTORY_STATIC")
    if env:
        return Path(env)
    # src/trajectory_review/ui -> repository root / static (editable install or checkout)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "static" / "app.css").exists():
            return parent / "static"
    raise FileNotFoundError("static/ not found beside the package")
