from __future__ import annotations

import os
from pathlib import Path

import pytest

from trajectory_review.model.reader import TraceReader

# Tests build their own indexes; the on-disk cache is tested explicitly (tests/index/test_cache.py).
# Set before any app subprocess starts, so the servers inherit it too.
os.environ["TRAJECTORY_CACHE"] = "off"


@pytest.fixture
def read(tmp_path: Path):
    """Write a recorder's spans to a file and open it with the real index and reader."""

    def _read(recorder, **kw) -> TraceReader:
        path = recorder.write(tmp_path / "trace-1.jsonl", **kw)
        return TraceReader.open([path])

    return _read


@pytest.fixture(scope="session")
def traces_8k(tmp_path_factory) -> Path:
    """8,000 generated conversations: enough that indexing them and reading them in take
    a second or more each on two cores, so a test can act while they do."""
    from tests.fixtures import generated

    return generated(8_000, seed=23)


@pytest.fixture(scope="session")
def chdb_dir(tmp_path_factory) -> Path:
    """The one chdb directory of the test session: chdb opens one directory per process,
    so every test module's stores are databases in it."""
    return tmp_path_factory.mktemp("chdb")


_stores = iter(range(10**6))


@pytest.fixture
def store(chdb_dir: Path) -> str:
    """A fresh database in the session's chdb directory: its location."""
    return f"chdb://{chdb_dir}?database=t{next(_stores)}"


@pytest.fixture(scope="session")
def pg():
    """A PostgreSQL server of this test process's own, on loopback (tests/pg.py)."""
    from trajectory_review_bench.pg import PgServer

    server = PgServer()
    yield server
    server.close()


_databases = iter(range(10**6))


@pytest.fixture
def pg_url(pg) -> str:
    """A fresh database on the test server: its superuser URL."""
    return pg.database(f"reviews_{os.getpid()}_{next(_databases)}")
