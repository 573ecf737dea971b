"""A real PostgreSQL server for the tests (SPEC.md, "Beyond one machine"): Debian's server
(package postgresql), its cluster made by initdb in a temp folder and run as the postgres
user when the tests run as root (PostgreSQL refuses root), on a free port of 127.0.0.1.
If it cannot start, the tests that need it fail and say why: they are never skipped."""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

USER = "paperfeeds"  # the cluster's superuser (trust authentication on 127.0.0.1 only)


def _bindir() -> Path:
    """Return the folder of the newest installed server's programs (initdb, postgres)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    exe = shutil.which("initdb")
    if exe:
        return Path(exe).resolve().parent
    pytest.fail("PostgreSQL's server was not found: apt-get install postgresql (Debian)")


def _version(path: str) -> tuple[int, ...]:
    part = Path(path).parents[1].name
    return tuple(int(x) for x in part.split(".") if x.isdigit())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user(cmd: list[str]) -> list[str]:
    """Run as the postgres user when root (initdb and postgres refuse root)."""
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


@dataclass
class PostgresServer:
    port: int
    _names: Iterator[int]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database; return its URL."""
        import psycopg

        name = f"state_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


@contextmanager
def running() -> Iterator[PostgresServer]:
    """Start a server with its cluster in a new temp folder; stop it and remove the folder
    at the end. (The folder is made in the system's temp folder, which the server's user
    can reach, unlike pytest's own.)"""
    bindir = _bindir()
    tmp = Path(tempfile.mkdtemp(prefix="paperfeeds-pg-"))
    data = tmp / "pgdata"
    if os.geteuid() == 0:  # the server's user must own its folder
        shutil.chown(tmp, "postgres", "postgres")
    init = _as_server_user(
        [str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8",
         "--locale=C.UTF-8", "--no-sync"]
    )  # fmt: skip
    done = subprocess.run(init, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"initdb failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    port = _free_port()
    log = tmp / "postgres.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            _as_server_user(
                [str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(tmp),
                 "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                 "-c", "full_page_writes=off", "-c", "synchronous_commit=off"]
            ),
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = PostgresServer(port, itertools.count())
    try:
        _wait(server, proc, log)
        yield server
    finally:
        proc.terminate()  # smart shutdown: sessions end, the server stops
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def _wait(server: PostgresServer, proc: subprocess.Popen[bytes], log: Path) -> None:
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            pytest.fail(f"PostgreSQL exited ({proc.returncode}): {log.read_text()[-2000:]}")
        try:
            psycopg.connect(server.url(), connect_timeout=2).close()
            return
        except psycopg.OperationalError as e:
            if time.monotonic() > deadline:
                pytest.fail(f"PostgreSQL did not start in 60 s: {e}; {log.read_text()[-2000:]}")
            time.sleep(0.1)
