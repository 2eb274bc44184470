"""Every setting read from the environment, in one place (the README's table).

Functions, not constants: tests and the CLI set variables after import, and a long-running
server picks up nothing it was not started with anyway. Each returns a checked value; a
value that cannot be used falls back to the default rather than failing a start.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DEFAULT_TRACES = "traces"
DEFAULT_MAX_LINE_MB = 64
DEFAULT_WATCH_SECONDS = 60.0


def _get(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def _positive_int(name: str) -> int | None:
    raw = _get(name).strip()
    return int(raw) if raw.isascii() and raw.isdigit() and int(raw) > 0 else None


# -- where things are ------------------------------------------------------------------------


def traces() -> str:
    """TRAJECTORY_TRACES: `:`-separated sources ("" when unset)."""
    return _get("TRAJECTORY_TRACES")


def commons_traces_dir() -> str:
    """COMMONS_TRACES_DIR: where commons (R and Python) writes its trace files."""
    return _get("COMMONS_TRACES_DIR").strip()


def exporter_file() -> str:
    """OTEL_EXPORTER_OTLP_TRACES_FILE: the file exporter's path or %N template."""
    return _get("OTEL_EXPORTER_OTLP_TRACES_FILE")


def since() -> str:
    """TRAJECTORY_SINCE: a window (`30d`, `12h`) or a date; "" for every conversation."""
    return _get("TRAJECTORY_SINCE").strip()


def review_log() -> str:
    return _get("TRAJECTORY_REVIEW_LOG")


def rules_file() -> str:
    return _get("TRAJECTORY_RULES")


def rules_dir() -> Path | None:
    """TRAJECTORY_RULES_DIR, else the folder of TRAJECTORY_RULES: the profiles a reviewer
    may try in the What if tab."""
    folder = _get("TRAJECTORY_RULES_DIR").strip()
    if folder:
        return Path(folder)
    rules = rules_file().strip()
    return Path(rules).parent if rules else None


def static() -> str:
    return _get("TRAJECTORY_STATIC")


def cache_dir() -> Path | None:
    """TRAJECTORY_CACHE (`off` disables), else the user's cache folder; None when off or
    not writable (the cache is an optimisation, never a reason to fail)."""
    setting = _get("TRAJECTORY_CACHE")
    if setting.lower() in ("off", "0", "false", "no"):
        return None
    base = (
        Path(setting)
        if setting
        else Path(_get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trajectory-review"
    )
    try:
        base.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=base):
            pass
    except OSError:
        return None
    return base


# -- limits and timing -----------------------------------------------------------------------


def max_line_bytes() -> int:
    return (_positive_int("TRAJECTORY_MAX_LINE_MB") or DEFAULT_MAX_LINE_MB) * 1024 * 1024


def watch_seconds() -> float:
    try:
        return float(_get("TRAJECTORY_WATCH_SECONDS", str(DEFAULT_WATCH_SECONDS)))
    except ValueError:
        return DEFAULT_WATCH_SECONDS


DEFAULT_WHATIF_SECONDS = 300.0


def whatif_seconds() -> float:
    """TRAJECTORY_WHATIF_SECONDS: how long one what-if run (the app's tab, `lint
    --compare`) may take before its workers are stopped."""
    try:
        value = float(_get("TRAJECTORY_WHATIF_SECONDS", str(DEFAULT_WHATIF_SECONDS)))
    except ValueError:
        return DEFAULT_WHATIF_SECONDS
    return value if 0 < value < 86_400 else DEFAULT_WHATIF_SECONDS


def workers() -> int | None:
    """TRAJECTORY_WORKERS, when set to a positive number."""
    return _positive_int("TRAJECTORY_WORKERS")


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count: a
    container or `taskset` may allow fewer)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def connect_max_response_mb() -> int:
    """TRAJECTORY_CONNECT_MAX_RESPONSE_MB: bytes one Connect response may send."""
    return _positive_int("TRAJECTORY_CONNECT_MAX_RESPONSE_MB") or 512


def connect_max_decompressed_mb() -> int:
    """TRAJECTORY_CONNECT_MAX_DECOMPRESSED_MB: what one response may unpack to."""
    return _positive_int("TRAJECTORY_CONNECT_MAX_DECOMPRESSED_MB") or 1024


def connect_max_pages() -> int:
    """TRAJECTORY_CONNECT_MAX_PAGES: pages of 1,000 spans read per content and store in
    one sync, whatever total the server claims."""
    return _positive_int("TRAJECTORY_CONNECT_MAX_PAGES") or 10_000


def connect_deadline_seconds() -> float:
    """TRAJECTORY_CONNECT_DEADLINE: seconds one request may take, start to last byte."""
    try:
        value = float(_get("TRAJECTORY_CONNECT_DEADLINE", "300"))
    except ValueError:
        return 300.0
    return value if 0 < value < 86_400 else 300.0


def connect_backoff() -> float:
    try:
        return max(0.0, float(_get("TRAJECTORY_CONNECT_BACKOFF", "0.5")))
    except ValueError:
        return 0.5


def debug() -> bool:
    return bool(_get("TRAJECTORY_DEBUG"))


# -- Posit Connect -----------------------------------------------------------------------------


def connect_server() -> str:
    return _get("CONNECT_SERVER").strip()


def connect_api_key() -> str:
    return _get("CONNECT_API_KEY").strip()


def on_posit_connect() -> bool:
    """Running as content on Posit Connect (where the process's account is not a person)."""
    return bool(_get("CONNECT_CONTENT_GUID")) or _get("POSIT_PRODUCT").upper() == "CONNECT"


def _flag(name: str) -> bool:
    return _get(name).strip().lower() in ("1", "true", "yes", "on")


# -- who may reach the app, and who the reviewer is --------------------------------------------


def trusted_proxy() -> bool:
    """A proxy in front of the app authenticates users and writes the identity header
    (`Shiny-Server-Credentials`): Posit Connect and Shiny Server, which the process can
    tell from its environment, or TRAJECTORY_TRUSTED_PROXY=1 for another one that sets
    the header and strips it from what browsers send. Anywhere else the header is
    whatever a client wrote, and is dropped."""
    return (
        on_posit_connect()
        or bool(_get("SHINY_SERVER_VERSION"))
        or _flag("TRAJECTORY_TRUSTED_PROXY")
    )


def _listed(name: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in _get(name).replace(",", " ").split() if v.strip())


def allowed_hosts() -> tuple[str, ...]:
    """TRAJECTORY_ALLOWED_HOSTS: more `Host` values the app answers (`host` or
    `host:port`, comma- or space-separated; `*` turns the check off, for a proxy that
    rewrites Host and checks it itself)."""
    return _listed("TRAJECTORY_ALLOWED_HOSTS")


def leads() -> frozenset[str]:
    """TRAJECTORY_LEADS: the logins (as the trusted proxy names them, comma- or
    space-separated) who may settle a disagreement between reviewers."""
    return frozenset(name.casefold() for name in _listed("TRAJECTORY_LEADS"))


def allowed_origins() -> tuple[str, ...]:
    """TRAJECTORY_ALLOWED_ORIGINS: more origins (`https://review.example.com`) whose pages
    may open the app's websocket and post to it."""
    return _listed("TRAJECTORY_ALLOWED_ORIGINS")
