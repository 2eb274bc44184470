"""ClickHouse locations: the URL, the password, the names, and what a user is told when
the server cannot be used (HTTP only here: a stand-in on 127.0.0.1 answers as ClickHouse's
HTTP interface does to a wrong password)."""

from __future__ import annotations

import base64
import http.server
import threading

import pytest

from trajectory_review.sources import SourceError, shown, split_sources
from trajectory_review.sources.clickhouse import client, explain, parse_location
from trajectory_review.tools.cli import main


def test_a_clickhouse_url_names_host_port_database_table_and_tls():
    loc = parse_location("clickhouse://ann:s%40cret@ch.example:8443/otel?table=spans&secure=1")
    assert (loc.host, loc.port, loc.database, loc.table) == ("ch.example", 8443, "otel", "spans")
    assert (loc.user, loc.password, loc.secure) == ("ann", "s@cret", True)
    assert "s@cret" not in loc.shown and "ann@ch.example:8443/otel" in loc.shown


def test_defaults_are_the_collectors_table_in_the_default_database():
    loc = parse_location("clickhouse://localhost")
    assert (loc.database, loc.table, loc.port) == ("default", "otel_traces", None)
    assert not loc.secure
    chdb = parse_location("chdb:///data/ch?database=otel")
    assert (chdb.scheme, chdb.path, chdb.database, chdb.table) == (
        "chdb", "/data/ch", "otel", "otel_traces",
    )  # fmt: skip


def test_the_password_may_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("CLICKHOUSE_PASSWORD", "from-env")
    assert parse_location("clickhouse://bob@h/db").password == "from-env"
    assert parse_location("clickhouse://bob:inline@h/db").password == "inline"


@pytest.mark.parametrize(
    ("location", "says"),
    [
        ("clickhouse:///db", "no host"),
        ("clickhouse://h/db?tabel=x", "unknown parameter 'tabel'"),
        ("clickhouse://h/db?table=x;DROP", "not a plain name"),
        ("clickhouse://h/d%60b", "not a plain name"),
        ("clickhouse://h:99999/db", "not a ClickHouse URL"),
        ("chdb://", "no directory"),
    ],
)
def test_a_location_that_cannot_be_used_is_one_line(location, says):
    with pytest.raises(SourceError) as err:
        parse_location(location)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_password_is_never_shown():
    assert "hunter2" not in shown("clickhouse://bob:hunter2@h/db")
    with pytest.raises(SourceError) as err:
        parse_location("clickhouse://bob:hunter2@h/db?nope=1")
    assert "hunter2" not in str(err.value)


def test_a_clickhouse_url_in_trajectory_traces_stays_whole():
    url = "clickhouse://bob:pw@h:8123/db?table=t"
    assert split_sources(url) == [url]
    assert split_sources("traces:connect:abc") == ["traces", "connect:abc"]


def test_server_errors_are_explained_by_their_code():
    assert "wrong user or password" in explain(Exception("Code: 516. DB::Exception: x"))
    assert explain(Exception("Code: 60. DB::Exception: Unknown table")) == "no such table"
    assert explain(Exception("Code: 81. DB::Exception: Database x does not exist")) == (
        "no such database"
    )
    assert "connection refused" in explain(Exception("[Errno 111] Connection refused"))


class _WrongPassword(http.server.BaseHTTPRequestHandler):
    """What ClickHouse's HTTP interface answers to any query with a wrong password."""

    def _refuse(self) -> None:
        body = (
            b"Code: 516. DB::Exception: bob: Authentication failed: password is incorrect, "
            b"or there is no user with such name. (AUTHENTICATION_FAILED) (version 25.3.1.1)\n"
        )
        self.send_response(401)
        self.send_header("X-ClickHouse-Exception-Code", "516")
        self.send_header("Content-Type", "text/plain; charset=UTF-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _refuse

    def log_message(self, *args: object) -> None:
        pass


def test_a_wrong_password_over_http_is_one_line_naming_the_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _WrongPassword)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        with pytest.raises(SourceError) as err:
            client(parse_location(f"clickhouse://bob:bad@127.0.0.1:{port}/otel"))
    finally:
        server.shutdown()
    text = str(err.value)
    assert f"clickhouse://bob@127.0.0.1:{port}/otel" in text and "bad" not in text.split("?")[0]
    assert "wrong user or password" in text and "\n" not in text


def test_an_unreachable_server_is_one_line():
    with pytest.raises(SourceError) as err:
        client(parse_location("clickhouse://127.0.0.1:9/otel"))
    assert "cannot reach the server" in str(err.value)


@pytest.mark.parametrize("password", ["pa/ss", "pa#ss", "pa?ss", "p@ss/w#rd?x", "a:b/c"])
def test_a_password_with_unencoded_reserved_characters_is_never_printed(capsys, password):
    secret = password.split("/")[0] if password.startswith("a:") else password
    for location in (
        f"clickhouse://bob:{password}@ch.example:8123/otel",
        f"clickhouse://bob:{password}@ch.example/otel?table=t",
    ):
        with pytest.raises(SourceError) as err:
            parse_location(location)
        text = str(err.value)
        assert "percent-encode the password" in text and "\n" not in text
        assert password not in text and secret[:4] not in text.replace("***", "")
        assert main(["lint", location]) == 2
        out = capsys.readouterr()
        assert password not in out.err + out.out


class _EchoingProxy(http.server.BaseHTTPRequestHandler):
    """A proxy in front of ClickHouse whose error page echoes the request's headers."""

    def _echo(self) -> None:
        body = f"502 Bad Gateway; request headers: {dict(self.headers)}".encode()
        self.send_response(502)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _echo

    def log_message(self, *args: object) -> None:
        pass


def test_credentials_a_proxy_echoes_in_its_error_are_never_printed(capsys):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoingProxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        location = f"clickhouse://bob:s3cr3t-pw@127.0.0.1:{port}/otel"
        code = main(["lint", location])
    finally:
        server.shutdown()
    err = capsys.readouterr().err
    token = base64.b64encode(b"bob:s3cr3t-pw").decode()
    assert code == 2 and "s3cr3t-pw" not in err and token not in err
    assert "\n" not in err.strip()
