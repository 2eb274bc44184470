"""Another site cannot drive the app, and nobody signs as somebody else (issue #34 §1-2).

A page served on another loopback address stands in for any site a reviewer has open
while the app runs: it tries the app's websocket and frames the app. A request naming
another host stands in for DNS rebinding. A browser that sends Shiny's identity header
stands in for a client claiming a login nobody vouched for."""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import RunningApp, add_note
from trajectory_review.reviews.log import local_user

ATTACKER_HOST = "127.0.0.2"  # another loopback address: another origin, same machine

ATTACK = """<!doctype html><title>attack</title>
<script>
const out = {opened: false, messages: 0, closed: null, framed: false};
window.out = out;
const ws = new WebSocket("ws://127.0.0.1:%(port)d/websocket/");
ws.onopen = () => {
  out.opened = true;
  const init = {".clientdata_url_search": "?conversation=scene-multi"};
  ws.send(JSON.stringify({method: "init", data: init}));
};
ws.onmessage = () => { out.messages += 1; };
ws.onclose = (e) => { out.closed = e.code; document.body.dataset.socket = "closed"; };
</script>
<body>
<iframe id="frame" src="http://127.0.0.1:%(port)d/?conversation=scene-multi"
  onload="document.body.dataset.frame = 'loaded'"></iframe>
</body>"""


class AttackerSite:
    """A site on another origin, serving one page."""

    def __init__(self, app_port: int) -> None:
        page = (ATTACK % {"port": app_port}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer((ATTACKER_HOST, 0), Handler)
        self.url = f"http://{ATTACKER_HOST}:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def attacker(app_server: RunningApp) -> Iterator[AttackerSite]:
    site = AttackerSite(app_server.port)
    yield site
    site.server.shutdown()


def log_size(app: RunningApp) -> int:
    return app.review_log.stat().st_size if app.review_log.exists() else 0


def test_a_page_of_another_site_can_neither_open_the_socket_nor_frame_the_app(
    page, app_server, attacker
):
    before = log_size(app_server)
    page.goto(attacker.url)
    expect(page.locator("body")).to_have_attribute("data-socket", "closed", timeout=15_000)
    out = page.evaluate("window.out")
    assert out["opened"] is False and out["messages"] == 0
    # the frame's load event fires on the browser's error page: the app is not in it
    expect(page.locator("body")).to_have_attribute("data-frame", "loaded", timeout=15_000)
    (frame,) = [f for f in page.frames if f != page.main_frame]
    assert not frame.url.startswith("http://127.0.0.1"), frame.url
    assert log_size(app_server) == before


def test_the_same_page_on_the_apps_own_origin_is_let_in(page, app_server):
    # the control: the attack page's socket code, run by a page of the app itself
    page.goto(app_server.url + "?conversation=scene-multi")
    page.wait_for_selector(".tr-conversation", timeout=30_000)
    opened = page.evaluate(
        """() => new Promise((done) => {
            const ws = new WebSocket(location.origin.replace("http", "ws") + "/websocket/");
            ws.onopen = () => { ws.close(); done(true); };
            ws.onerror = () => done(false);
        })"""
    )
    assert opened is True


def test_a_rebound_host_name_is_refused_and_the_page_forbids_framing_and_inline_script(
    app_server,
):
    port = app_server.port
    base = f"http://127.0.0.1:{port}/"
    # DNS rebinding: the attacker's name resolves to 127.0.0.1, so Host carries it
    r = httpx.get(base, headers={"Host": f"rebound.example:{port}"})
    assert r.status_code == 403 and "rebound" not in r.text
    handshake = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    r = httpx.get(base + "websocket/", headers={**handshake, "Host": f"rebound.example:{port}"})
    assert r.status_code == 403
    r = httpx.get(base + "websocket/", headers={**handshake, "Origin": "http://127.0.0.2:9"})
    assert r.status_code == 403
    # a state-changing request from another site's page
    r = httpx.post(base + "session/x/upload/y", headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
    # the app's own names pass
    for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
        assert httpx.get(base, headers={"Host": host}).status_code == 200
    page = httpx.get(base)
    assert page.headers["x-frame-options"] == "SAMEORIGIN"
    csp = page.headers["content-security-policy"]
    assert "frame-ancestors 'self'" in csp and "unsafe-inline" not in csp.split("style-src")[0]
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    scripts = re.findall(r"<script[^>]*>", page.text)
    assert scripts and all(f'nonce="{nonce}"' in s for s in scripts)
    assert nonce not in httpx.get(base).headers["content-security-policy"]  # one per page


def test_a_page_of_the_same_host_under_another_scheme_is_another_site(app_server):
    """An https page on 127.0.0.1:port is not the http app at that address: browsers
    count the scheme in an origin, and so does the app."""
    base = f"http://127.0.0.1:{app_server.port}/"
    handshake = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    other = f"https://127.0.0.1:{app_server.port}"
    r = httpx.get(base + "websocket/", headers={**handshake, "Origin": other})
    assert r.status_code == 403
    r = httpx.post(base + "session/x/upload/y", headers={"Origin": other})
    assert r.status_code == 403
    r = httpx.post(base + "session/x/upload/y", headers={"Origin": base.rstrip("/")})
    assert r.status_code != 403


def test_the_app_runs_under_its_content_security_policy(page, app_server):
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    page.goto(app_server.url + "?conversation=scene-cited&exchange=1")
    page.wait_for_selector(".tr-conversation", timeout=30_000)
    page.locator("#ex-1 .tr-assistant .shiny-aside-pill").first.click()
    expect(page.locator(".shiny-aside-popover")).to_be_visible()
    page.goto(app_server.url + "?view=flagged")
    expect(page.locator("#list-show_done")).to_be_visible()
    page.goto(app_server.url + "?view=answers")
    page.wait_for_selector(".tr-row")
    expect(page.locator("#list-show_done")).to_be_hidden()
    page.locator("input[name='list-view'][value='flagged']").check()
    expect(page.locator("#list-show_done")).to_be_visible()
    assert violations == []


CLAIM = json.dumps({"user": "ceo@example.com", "groups": ["admins"]})


def test_an_identity_header_from_a_browser_is_not_believed(browser, app_server):
    context = browser.new_context(extra_http_headers={"Shiny-Server-Credentials": CLAIM})
    page = context.new_page()
    page.goto(app_server.url + "?conversation=scene-multi")
    page.wait_for_selector(".tr-conversation", timeout=30_000)
    who = page.locator(".tr-reviewing-as")
    expect(who).to_contain_text(local_user())
    expect(who.locator(".tr-identity")).to_have_text("declared")
    add_note(page, "who wrote this?")
    events = [json.loads(ln) for ln in app_server.review_log.read_text().splitlines()]
    mine = [e for e in events if e["text"] == "who wrote this?"]
    assert mine and mine[0]["author"] == local_user() and mine[0]["identity"] == "declared"
    assert "ceo@example.com" not in app_server.review_log.read_text()
    context.close()


def test_a_trusted_proxys_login_is_authenticated_and_printable(browser, behind_a_proxy):
    app = behind_a_proxy
    # bidi override and zero-width characters, as a hostile directory could hold them
    claim = json.dumps({"user": "\u202eeve\u200b@example.com\u0007", "groups": []})
    context = browser.new_context(extra_http_headers={"Shiny-Server-Credentials": claim})
    page = context.new_page()
    page.goto(app.url + "?conversation=scene-multi")
    page.wait_for_selector(".tr-conversation", timeout=30_000)
    who = page.locator(".tr-reviewing-as")
    expect(who.locator("b")).to_have_text("eve@example.com")
    expect(who.locator(".tr-identity")).to_have_text("authenticated")
    add_note(page, "signed in")
    (event,) = [json.loads(ln) for ln in app.review_log.read_text().splitlines()]
    assert event["author"] == "eve@example.com" and event["identity"] == "authenticated"
    expect(page.locator(".tr-notes .tr-identity")).to_have_text("authenticated")
    context.close()
