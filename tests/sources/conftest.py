"""What the Connect tests share: a stand-in server for Connect's traces API, set up as the
app would find it (tests/sources/connect_standin.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sources.connect_standin import ConnectStandIn
from trajectory_review.sources import connect_api

GUID = "0f3c2a1e-5b7d-4c9e-8a6f-1d2b3c4d5e6f"
OTHER = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"


@pytest.fixture
def standin(monkeypatch, tmp_path) -> Iterator[ConnectStandIn]:
    """The stand-in, named in CONNECT_SERVER with its key, a cache of the test's own,
    short retries, and pages of 100 spans (several pages from a small corpus)."""
    server = ConnectStandIn()
    monkeypatch.setenv("CONNECT_SERVER", server.url + "/__api__/")
    monkeypatch.setenv("CONNECT_API_KEY", server.key)
    monkeypatch.setenv("TRAJECTORY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(connect_api.RetrySettings, "first_wait", 0.01)
    monkeypatch.setattr(connect_api, "PAGE", 100)
    yield server
    server.stop()
