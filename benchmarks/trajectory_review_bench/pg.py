"""A throwaway PostgreSQL server on loopback, for the review-store tests and the bench's
reviews step: Debian's server (`make test` installs it when missing), a cluster of its
own in a temporary folder, run as the `postgres` account when run as root (the server
refuses root)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

SUPERUSER, SUPER_PASSWORD = "tr_admin", "admin-pw"


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(
            f"PostgreSQL's {name} is not installed (make test installs Debian's postgresql)"
        )
    return found[-1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tr-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as_root = os.geteuid() == 0
        if self._as_root:
            shutil.chown(self.root, "postgres", "postgres")
        pwfile = self.root / "pw"
        pwfile.write_text(SUPER_PASSWORD + "\n")
        if self._as_root:
            shutil.chown(pwfile, "postgres", "postgres")
        self._run(_bin("initdb"), "-D", str(self.data), "-U", SUPERUSER, f"--pwfile={pwfile}",
                  "-A", "scram-sha-256", "--no-sync", "-E", "UTF8")  # fmt: skip
        self.start()

    def _run(self, *cmd: str) -> None:
        full = ["runuser", "-u", "postgres", "--", *cmd] if self._as_root else list(cmd)
        subprocess.run(full, check=True, capture_output=True, cwd=self.root)

    def start(self) -> None:
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off"
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-o", opts, "-l",
                  str(self.root / "log"), "-w", "start")  # fmt: skip

    def stop(self) -> None:
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, user: str = SUPERUSER, password: str = SUPER_PASSWORD, db: str = "postgres"):
        return (
            f"postgresql://{quote(user, safe='')}:{quote(password, safe='')}"
            f"@127.0.0.1:{self.port}/{db}"
        )

    def admin(self, sql: str, db: str = "postgres") -> list:
        import psycopg

        with psycopg.connect(self.url(db=db), autocommit=True) as conn:
            cur = conn.execute(sql)
            return cur.fetchall() if cur.description else []

    def database(self, name: str) -> str:
        """A fresh database: its superuser URL."""
        self.admin(f'CREATE DATABASE "{name}"')
        return self.url(db=name)

    def close(self) -> None:
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)
