"""Traces in ClickHouse: the sources `clickhouse://…` and `chdb://DIR`.

An OpenTelemetry Collector's ClickHouse exporter writes spans to the `otel_traces` table;
the app reads them in place (index/clickhouse.py) instead of copying them. Both kinds go
through clickhouse-connect's one client API: `clickhouse://` over ClickHouse's HTTP
interface, `chdb://` in-process through chdb (ClickHouse's own engine), which registers
itself as a clickhouse-connect backend. This module only parses locations, opens clients
and turns what goes wrong into one line naming what and where.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from trajectory_review.sources.base import Progress, SourceError
from trajectory_review.sources.locations import is_clickhouse

DEFAULT_TABLE = "otel_traces"
DEFAULT_DATABASE = "default"
PASSWORD_ENV = "CLICKHOUSE_PASSWORD"
# Names go into SQL as quoted identifiers; anything else is refused rather than escaped,
# so no location can smuggle SQL (and no name needs quoting rules to be read right).
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# The columns of the Collector's table the app reads, and the kind of type each must have
# (LowCardinality set aside); a table without them, or with other types, is not one. A
# table with the right names and other types once failed one run, then read as 0
# conversations, silently, on every run after.
COLUMN_KINDS = {
    "Timestamp": "DateTime64", "TraceId": "String", "SpanId": "String",
    "ParentSpanId": "String", "SpanName": "String", "SpanKind": "String",
    "ServiceName": "String", "ResourceAttributes": "Map(String, String)",
    "ScopeName": "String", "ScopeVersion": "String", "SpanAttributes": "Map(String, String)",
    "Duration": "integer", "StatusCode": "String", "StatusMessage": "String",
}  # fmt: skip
REQUIRED_COLUMNS = tuple(COLUMN_KINDS)
_INTEGERS = frozenset({"UInt64", "Int64", "UInt32", "Int32"})


@dataclass(frozen=True)
class ClickHouseLocation:
    """A parsed `clickhouse://[user[:password]@]host[:port]/database[?table=…&secure=1]` or
    `chdb://DIR[?database=…&table=…]`. `shown` is the location without its password."""

    scheme: str  # "clickhouse" or "chdb"
    database: str
    table: str
    host: str = ""
    port: int | None = None
    user: str = ""
    password: str = ""
    secure: bool = False
    path: str = ""  # chdb's data directory

    @property
    def shown(self) -> str:
        if self.scheme == "chdb":
            return f"chdb://{self.path}?database={self.database}&table={self.table}"
        who = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        s = "&secure=1" if self.secure else ""
        return f"clickhouse://{who}{self.host}{port}/{self.database}?table={self.table}{s}"

    def qualified(self, table: str | None = None) -> str:
        """`db`.`table` for SQL (the names were checked when the location was parsed)."""
        return f"`{self.database}`.`{table or self.table}`"


def parse_location(location: str) -> ClickHouseLocation:
    """The location, checked; a SourceError (one line) for anything that cannot be used."""
    text = location.strip()
    lower = text.lower()
    if lower.startswith("chdb://"):
        return _parse_chdb(text)
    if not lower.startswith("clickhouse://"):
        raise SourceError(f"not a ClickHouse location: {location!r}")
    userinfo = _userinfo(text)
    if userinfo is not None and any(c in userinfo for c in "/?#"):
        # urlsplit would cut the URL inside the password and print the rest as a host
        raise SourceError(
            f"{_redact(text)}: the user or password holds / ? or #: percent-encode the "
            "password in the URL (%2F %3F %23), or set it in CLICKHOUSE_PASSWORD"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise SourceError(f"{_redact(text)}: not a ClickHouse URL (a bad port?)") from None
    query = _query(parts.query, text, ("table", "secure"))
    if not parts.hostname:
        raise SourceError(f"{_redact(text)}: no host (clickhouse://host[:port]/database)")
    database = unquote(parts.path.strip("/")) or DEFAULT_DATABASE
    secure = query.get("secure", "0").lower() in ("1", "true", "yes")
    loc = ClickHouseLocation(
        scheme="clickhouse",
        database=database,
        table=query.get("table", DEFAULT_TABLE),
        host=parts.hostname,
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or "") or os.environ.get(PASSWORD_ENV, ""),
        secure=secure,
    )
    return _checked(loc, text)


def _parse_chdb(text: str) -> ClickHouseLocation:
    rest = text[len("chdb://") :]
    path, _, raw_query = rest.partition("?")
    if not path:
        raise SourceError(f"{text}: no directory (chdb://DIR)")
    query = _query(raw_query, text, ("table", "database"))
    loc = ClickHouseLocation(
        scheme="chdb",
        database=query.get("database", DEFAULT_DATABASE),
        table=query.get("table", DEFAULT_TABLE),
        path=str(Path(unquote(path)).expanduser()),
    )
    return _checked(loc, text)


def _query(raw: str, text: str, known: tuple[str, ...]) -> dict[str, str]:
    values = parse_qs(raw, keep_blank_values=True)
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise SourceError(
            f"{_redact(text)}: unknown parameter {unknown[0]!r} (known: {', '.join(known)})"
        )
    return {k: v[-1] for k, v in values.items()}


def _checked(loc: ClickHouseLocation, text: str) -> ClickHouseLocation:
    for what, name in (("database", loc.database), ("table", loc.table)):
        if not _NAME.fullmatch(name):
            raise SourceError(
                f"{_redact(text)}: {what} {name[:80]!r} is not a plain name (letters, digits, _)"
            )
    return loc


def _userinfo(text: str) -> str | None:
    """What stands before the last `@` of a `scheme://…` location (user and password),
    found without parsing, so a password holding `/`, `?` or `#` is still found."""
    head, sep, rest = text.partition("://")
    if not sep:
        return None
    at = rest.rfind("@")
    return rest[:at] if at >= 0 else None


def _redact(text: str) -> str:
    """The location as it may be shown: any password in it replaced by ***, however
    malformed the rest is."""
    userinfo = _userinfo(text)
    if userinfo is None or ":" not in userinfo:
        return text[:300]
    head, _, rest = text.partition("://")
    user = userinfo.split(":", 1)[0]
    return f"{head}://{user}:***@{rest[len(userinfo) + 1 :]}"[:300]


# -- clients ---------------------------------------------------------------------------------

# One client per chdb directory per process: chdb opens a directory in one process only,
# and a second session on it in the same process would fail or see a stale catalog.
_CLIENTS: dict[str, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def client(loc: ClickHouseLocation, create: bool = False) -> Any:
    """A clickhouse-connect client for the location (shared per chdb directory). A chdb
    directory is made only when asked (`load` filling a new store): a mistyped one read
    by `export` or `serve` once left an empty store behind."""
    try:
        import clickhouse_connect
    except ImportError:  # pragma: no cover - a pinned dependency
        raise SourceError("ClickHouse sources need clickhouse-connect (pip install it)") from None
    if loc.scheme == "chdb":
        key = str(Path(loc.path).resolve())
        with _CLIENTS_LOCK:
            if key not in _CLIENTS:
                try:
                    import chdb  # noqa: F401 - registers the chdb:// backend
                except ImportError:
                    raise SourceError(
                        f"{loc.shown}: chdb is not installed (pip install chdb)"
                    ) from None
                if not create and not Path(key).is_dir():
                    raise SourceError(
                        f"{loc.shown}: no chdb store there (`trajectory-review load` makes one)"
                    )
                Path(key).mkdir(parents=True, exist_ok=True)
                try:
                    _CLIENTS[key] = clickhouse_connect.get_client(dsn=f"chdb://{key}")
                except Exception as exc:
                    raise SourceError(f"{loc.shown}: cannot open ({explain(exc, loc)})") from None
            return _CLIENTS[key]
    # clickhouse-connect logs its own line for a failed request; the one line we raise
    # says it better, and a user's terminal gets one line, not two.
    logging.getLogger("clickhouse_connect").setLevel(logging.CRITICAL)
    try:
        return clickhouse_connect.get_client(
            host=loc.host,
            port=loc.port or (8443 if loc.secure else 8123),
            username=loc.user or "default",
            password=loc.password,
            secure=loc.secure,
            connect_timeout=10,
            send_receive_timeout=300,
        )
    except Exception as exc:
        raise SourceError(f"{loc.shown}: {explain(exc, loc)}") from None


_BASIC = re.compile(r"(?i)\b(basic|bearer)\s+[A-Za-z0-9+/=._~-]{4,}")


def scrub(text: str, loc: ClickHouseLocation | None) -> str:
    """Text from a server or a library with every form of the credentials taken out: the
    password as written and URL-encoded, the Basic value clickhouse-connect sends, any
    Authorization value (a proxy that echoes request headers in its error page)."""
    if loc is not None and loc.password:
        token = base64.b64encode(f"{loc.user or 'default'}:{loc.password}".encode()).decode()
        for secret in (token, loc.password, quote(loc.password, safe="")):
            text = text.replace(secret, "***")
    return _BASIC.sub(lambda m: f"{m.group(1)} ***", text)


def explain(exc: BaseException, loc: ClickHouseLocation | None = None) -> str:
    """What went wrong talking to ClickHouse, in words a user can act on (never the
    credentials)."""
    text = scrub(" ".join(str(exc).split()) or type(exc).__name__, loc)[:500]
    code = re.search(r"Code: (\d{1,4})\.", text[:2000])
    number = int(code.group(1)) if code else None
    if number in (516, 192, 193, 194) or "Authentication failed" in text[:2000]:
        return "wrong user or password (set the password in the URL or CLICKHOUSE_PASSWORD)"
    if number == 81:
        return "no such database"
    if number == 60:
        return "no such table"
    if number in (497, 164):
        return "this user may not do that (" + text[:200] + ")"
    if "Connection refused" in text or "Failed to establish" in text:
        return "cannot reach the server (connection refused)"
    if "timed out" in text or "Timeout" in text:
        return "cannot reach the server (timed out)"
    if "Name or service not known" in text or "getaddrinfo" in text:
        return "cannot reach the server (no such host)"
    if "SSL" in text or "certificate" in text.lower():
        return "TLS failed (" + text[:160] + ")"
    return text[:300]


def check_table(loc: ClickHouseLocation, cli: Any) -> None:
    """The spans table exists and has the Collector's columns, else one line saying which."""
    try:
        rows = cli.query(
            "SELECT name, type FROM system.columns "
            "WHERE database = {db:String} AND table = {t:String}",
            parameters={"db": loc.database, "t": loc.table},
        ).result_rows
    except Exception as exc:
        raise SourceError(f"{loc.shown}: {explain(exc, loc)}") from None
    if not rows:
        raise SourceError(
            f"{loc.shown}: no table {loc.database}.{loc.table} (the Collector's ClickHouse "
            "exporter creates it; `trajectory-review load` does too)"
        )
    have = {str(r[0]): str(r[1]) for r in rows}
    missing = [c for c in REQUIRED_COLUMNS if c not in have]
    if missing:
        raise SourceError(
            f"{loc.shown}: table {loc.database}.{loc.table} lacks column(s) "
            f"{', '.join(missing)}: not an OpenTelemetry Collector traces table"
        )
    wrong = [
        f"{c} is {have[c][:60]} (want {'an integer' if k == 'integer' else k})"
        for c, k in COLUMN_KINDS.items()
        if not _kind_matches(have[c], k)
    ]
    if wrong:
        raise SourceError(
            f"{loc.shown}: table {loc.database}.{loc.table}: column {'; '.join(wrong)}: "
            "not an OpenTelemetry Collector traces table"
        )


def plain_type(type_name: str) -> str:
    """A ClickHouse type without its LowCardinality wrappers (a linear scan)."""
    out: list[str] = []
    closers: list[bool] = []  # per open parenthesis: does it close a LowCardinality?
    i = 0
    wrapper = "LowCardinality("
    while i < len(type_name):
        if type_name.startswith(wrapper, i):
            closers.append(True)
            i += len(wrapper)
            continue
        ch = type_name[i]
        if ch == "(":
            closers.append(False)
        elif ch == ")" and closers:
            if closers.pop():
                i += 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _kind_matches(type_name: str, kind: str) -> bool:
    plain = plain_type(type_name)
    if kind == "DateTime64":
        return plain.startswith("DateTime64(")
    if kind == "integer":
        return plain in _INTEGERS
    return plain == kind


@dataclass(frozen=True)
class ClickHouseSource:
    """A ClickHouse traces table, read in place: it gives the index no files."""

    location: str

    @classmethod
    def open(cls, location: str | os.PathLike[str]) -> ClickHouseSource | None:
        return cls(str(location)) if is_clickhouse(location) else None

    def sync(self, progress: Progress | None = None) -> list[str]:
        return []  # nothing is mirrored: queries run where the spans are

    def files(self, skipped: list[str]) -> list[Path]:
        loc = parse_location(self.location)
        raise SourceError(
            f"{loc.shown}: a ClickHouse table is read in place; name it as the only source"
        )
