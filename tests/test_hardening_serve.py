"""Hardening of `feeds serve` and `feeds watch`, as real processes: nothing outside public/
is served through a symlink, hostile request paths get a quiet 4xx (never a traceback),
bad --port / --host values are one clear line, and SIGHUP ends `feeds watch` like SIGTERM."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, Workspace, run_feeds, slow_feeds
from tests.test_serve import published, request, start_serve, stop
from tests.test_watch import TIMEOUT, empty_workspace, feed_ids, wait_for, watch_command

SECRET = "not for the feed reader"


@dataclass
class Serving:
    """A `feeds serve` of a published site with symlinks planted in it."""

    ws: Workspace
    proc: subprocess.Popen[str]
    port: int

    def new_stderr(self) -> str:
        """Return what the server wrote on stderr since the last call (without waiting).

        A handler's traceback is written before its connection is closed, so once a
        response has been read to its end, whatever it caused is here."""
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        os.set_blocking(fd, False)
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")

    def get(self, path: str) -> tuple[int, bytes]:
        """GET path; return the status and body, and fail on a traceback from the server."""
        try:
            status, _headers, body = request(self.port, path)
        finally:
            err = self.new_stderr()
        assert "Traceback" not in err, err
        assert self.proc.poll() is None, err
        return status, body


def plant(ws: Workspace) -> Path:
    """Put symlinks into public/ (out of it, and within it) and return the outside folder."""
    public = ws.public
    outside = ws.root / "outside"
    outside.mkdir()
    (outside / "secret.html").write_text(SECRET)
    (outside / "index.html").write_text(SECRET)
    (public / "out").symlink_to(outside)  # a folder out of public/
    (public / "leak.html").symlink_to(outside / "secret.html")  # a file, absolute link
    (public / "papers" / "leak.html").symlink_to(Path("../../outside/secret.html"))
    (public / "topics" / "state.html").symlink_to(ws.state)
    if Path("/etc/passwd").is_file():
        (public / "etc").symlink_to("/etc")  # the issue's own example
        (public / "passwd.html").symlink_to("/etc/passwd")
    # A real folder of public/ whose index page is a link out: the directory index path.
    (public / "sub").mkdir()
    (public / "sub" / "index.html").symlink_to(outside / "secret.html")
    # A link that stays inside public/ but reaches a dotfile (public/ may be a git checkout).
    (public / ".git").mkdir()
    (public / ".git" / "config").write_text(SECRET)
    (public / "config.html").symlink_to(public / ".git" / "config")
    (public / "loop.html").symlink_to(public / "loop.html")
    # Links that stay inside public/, to ordinary files: served.
    (public / "papers" / "alias.html").symlink_to(Path("../index.html"))
    (public / "latest").symlink_to(Path("feeds"))
    return outside


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serving]:
    ws = published(tmp_path_factory.mktemp("hardening"))
    plant(ws)
    proc, port = start_serve(ws.public, ws.root)
    try:
        yield Serving(ws, proc, port)
    finally:
        stop(proc)


@pytest.mark.parametrize(
    "path",
    [
        "/out/secret.html",
        "/out/",  # the outside folder's index.html
        "/out/index.html",
        "/%6Fut/secret.html",  # percent-encoded
        "/out%2Fsecret.html",
        "//out/secret.html",
        "/leak.html",
        "/papers/leak.html",
        "/topics/state.html",
        "/sub/",  # a folder inside, its index page a link out
        "/sub/index.html",
        "/config.html",  # inside, but a dotfile
        "/etc/passwd",
        "/etc/hostname",
        "/passwd.html",
        "/%65tc/passwd",
    ],
)
def test_symlinks_out_of_public_are_not_followed(served: Serving, path: str) -> None:
    status, body = served.get(path)
    assert status == 404, body[:200]
    assert SECRET.encode() not in body
    assert b"root:" not in body
    assert not body.startswith(b"SQLite format")


@pytest.mark.parametrize(
    ("path", "same_as"),
    [
        ("/papers/alias.html", "index.html"),
        ("/latest/all.atom.xml", "feeds/all.atom.xml"),
        ("/latest/icml-2026.json", "feeds/icml-2026.json"),
    ],
)
def test_symlinks_within_public_are_served(served: Serving, path: str, same_as: str) -> None:
    status, body = served.get(path)
    assert status == 200
    assert body == (served.ws.public / same_as).read_bytes()


@pytest.mark.parametrize(
    "path",
    [
        "/index.html%00",
        "/%00",
        "/feeds/all.atom.xml%00.html",
        "/papers/%ff.html",  # not UTF-8
        "/%ed%a0%80",  # a UTF-16 surrogate, encoded as if UTF-8
        "/%c0%ae%c0%ae/",  # overlong "..", not UTF-8
        "/%2e%2e/",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/feeds/%2e%2e/%2e%2e/outside/secret.html",
        "/..%5c..%5coutside%5csecret.html",
        "/..\\..\\outside\\secret.html",
        "/papers\\..\\index.html",
        pytest.param("/" + "a" * 5000, id="a file name too long"),
        pytest.param("/" + "a/" * 3000, id="a path too long"),
        pytest.param("/" + "%61" * 3000, id="a name too long, percent-encoded"),
        "/loop.html",  # a symlink to itself
        "*",
        "index.html",  # not a path at all
        "http://example.invalid/../outside/secret.html",  # absolute form
    ],
)
def test_hostile_paths_get_a_quiet_4xx(served: Serving, path: str) -> None:
    status, body = served.get(path)
    assert 400 <= status < 500, body[:200]
    assert SECRET.encode() not in body
    # The server is still serving.
    assert served.get("/index.html")[0] == 200


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_a_port_out_of_range_is_a_usage_error(tmp_path: Path, port: str) -> None:
    (tmp_path / "public").mkdir()
    (tmp_path / "public" / "index.html").write_text("<html>")
    r = run_feeds(tmp_path, "serve", "--public", "public", "--port", port, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "Invalid value for '--port'" in r.stderr
    assert "0<=x<=65535" in r.stderr


def test_an_address_that_cannot_be_bound_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "public").mkdir()
    (tmp_path / "public" / "index.html").write_text("<html>")
    # TEST-NET-1: a literal address (no name lookup) that no interface of this machine has.
    r = run_feeds(tmp_path, "serve", "--public", "public", "--host", "192.0.2.1", timeout=30)
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()  # the system's reason, worded as it words it
    assert line.startswith("error: cannot listen on 192.0.2.1:8000: "), r.stderr


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_an_ipv6_address_is_served(tmp_path: Path) -> None:
    (tmp_path / "public").mkdir()
    (tmp_path / "public" / "index.html").write_text("<html>")
    proc = subprocess.Popen(
        [sys.executable, "-m", "feeds", "serve", "--public", "public", "--host", "::1",
         "--port", "0"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving public/ at http://[::1]:"), proc.stderr
        port = int(line.split("]:", 1)[1].split("/", 1)[0])
        with socket.create_connection(("::1", port), timeout=10) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            assert s.makefile("rb").readline().split()[1] == b"200"
    finally:
        stop(proc)
        proc.communicate(timeout=10)


@pytest.mark.skipif(
    signal.getsignal(signal.SIGHUP) is signal.SIG_IGN,
    reason="the tests run under nohup: a `feeds watch` they start ignores SIGHUP too",
)
def test_sighup_lets_the_current_cycle_finish_and_exits_0(tmp_path: Path) -> None:
    """As closing the terminal of a `feeds watch` does; the same as SIGTERM."""
    ws = empty_workspace(tmp_path / "ws")
    for seed in sorted((ROOT / "seeds").glob("*.txt")):
        shutil.copy2(seed, ws.inbox / seed.name)
    script = slow_feeds(tmp_path, 0.02)
    log = tmp_path / "watch.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(script), *watch_command(ws)], cwd=ws.root,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        papers = ws.public / "papers"
        wait_for("publishing under way", lambda: len(list(papers.glob("*.html"))) >= 5)
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(timeout=TIMEOUT) == 0, log.read_text()
    finally:
        proc.kill()
        proc.wait()
    assert "SIGHUP: finishing the current cycle" in log.read_text()
    assert "Traceback" not in log.read_text()
    assert len(list(papers.glob("*.html"))) == 60
    assert len(feed_ids(ws.public) or ()) == 60
    assert not [p for p in ws.public.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.skipif(not shutil.which("nohup"), reason="no nohup command")
def test_sighup_ignored_by_the_parent_stays_ignored(tmp_path: Path) -> None:
    """`nohup feeds watch &` must outlive the terminal: an inherited SIG_IGN is kept."""
    nohup = shutil.which("nohup")
    assert nohup
    ws = empty_workspace(tmp_path / "ws")
    log = tmp_path / "watch.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [nohup, sys.executable, "-m", "feeds", *watch_command(ws)], cwd=ws.root,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_for("the first publish", (ws.public / "index.html").is_file)
        proc.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=2)  # a watch that stops stops at its next 0.5 s look
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == 0, log.read_text()
    finally:
        proc.kill()
        proc.wait()
    assert "SIGHUP" not in log.read_text()
