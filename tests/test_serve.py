"""`feeds serve` over real HTTP: feed content types, ETag / Last-Modified and 304 answers,
no temp files or directory listings, and a clear error when nothing is published yet."""

from __future__ import annotations

import email.utils
import http.client
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, Workspace, make_workspace, run_feeds

SEEDS = sorted((ROOT / "seeds").glob("*.txt"))
Response = tuple[int, dict[str, str], bytes]


def start_serve(public: Path, cwd: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    """Start `feeds serve --port 0` and return the process and the port it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "feeds", "serve", "--public", str(public), "--port", "0", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 20)
    line = proc.stdout.readline() if ready else ""
    found = re.match(r"serving .* at http://localhost:(\d+)/", line)
    if not found:
        proc.kill()
        _out, err = proc.communicate(timeout=10)
        pytest.fail(f"feeds serve printed {line!r}; stderr: {err}")
    port = int(found.group(1))
    assert port != 0
    return proc, port


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def request(
    port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> Response:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        conn.close()


def published(root: Path) -> Workspace:
    """A workspace with the first seed published."""
    ws = make_workspace(root)
    (ws.inbox / SEEDS[1].name).unlink()
    r = run_feeds(ws.root, "run", *ws.cli_args())
    assert r.returncode == 0, r.stderr
    return ws


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, int]]:
    """A published site and a `feeds serve` of it, shared by the read-only tests."""
    ws = published(tmp_path_factory.mktemp("serve"))
    proc, port = start_serve(ws.public, ws.root)
    try:
        yield ws, port
    finally:
        stop(proc)


def test_a_feed_has_its_type_and_validators(site: tuple[Workspace, int]) -> None:
    ws, port = site
    status, headers, body = request(port, "/feeds/all.atom.xml")
    assert status == 200
    assert headers["content-type"].startswith("application/atom+xml")
    assert headers["etag"]
    assert email.utils.parsedate_to_datetime(headers["last-modified"])
    assert body == (ws.public / "feeds" / "all.atom.xml").read_bytes()


def test_if_none_match_gets_304(site: tuple[Workspace, int]) -> None:
    _ws, port = site
    _status, headers, _body = request(port, "/feeds/all.atom.xml")
    etag = headers["etag"]
    status, again, body = request(port, "/feeds/all.atom.xml", {"If-None-Match": etag})
    assert (status, body) == (304, b"")
    assert again["etag"] == etag
    listed = f'"nope", {etag}'  # one of several validators a cache holds
    assert request(port, "/feeds/all.atom.xml", {"If-None-Match": listed})[0] == 304
    other = request(port, "/feeds/all.atom.xml", {"If-None-Match": '"nope"'})
    assert other[0] == 200
    assert other[2]


def test_if_modified_since_gets_304(site: tuple[Workspace, int]) -> None:
    _ws, port = site
    _status, headers, _body = request(port, "/feeds/all.atom.xml")
    date = headers["last-modified"]
    status, _h, body = request(port, "/feeds/all.atom.xml", {"If-Modified-Since": date})
    assert (status, body) == (304, b"")
    older = email.utils.format_datetime(
        email.utils.parsedate_to_datetime(date).replace(year=2000), usegmt=True
    )
    assert request(port, "/feeds/all.atom.xml", {"If-Modified-Since": older})[0] == 200
    # An ETag that does not match wins over a date that does.
    both = {"If-None-Match": '"nope"', "If-Modified-Since": date}
    assert request(port, "/feeds/all.atom.xml", both)[0] == 200


def test_head_sends_the_headers_only(site: tuple[Workspace, int]) -> None:
    ws, port = site
    status, headers, body = request(port, "/feeds/all.rss.xml", method="HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["content-length"]) == (ws.public / "feeds" / "all.rss.xml").stat().st_size
    assert headers["etag"]
    conditional = {"If-None-Match": headers["etag"]}
    assert request(port, "/feeds/all.rss.xml", conditional, method="HEAD")[0] == 304


@pytest.mark.parametrize(
    ("path", "ctype"),
    [
        ("/feeds/all.rss.xml", "application/rss+xml"),
        ("/feeds/all.atom.xml", "application/atom+xml"),
        ("/feeds/all.json", "application/feed+json"),
        ("/feeds/icml-2026.json", "application/feed+json"),
        ("/feeds/icml-2026.rss.xml", "application/rss+xml"),
        ("/feeds.opml", "text/x-opml"),
        ("/index.html", "text/html"),
        ("/", "text/html"),
        ("/topics/icml-2026.html", "text/html"),
        ("/topics/icml-2026.bib", "application/x-bibtex"),
        ("/topics/all.ris", "application/x-research-info-systems"),
    ],
)
def test_content_types(site: tuple[Workspace, int], path: str, ctype: str) -> None:
    _ws, port = site
    status, headers, body = request(port, path)
    assert status == 200
    assert headers["content-type"].split(";")[0].strip() == ctype
    assert body


def test_a_paper_page_is_html(site: tuple[Workspace, int]) -> None:
    ws, port = site
    page = next((ws.public / "papers").glob("*.html"))
    status, headers, _body = request(port, f"/papers/{page.name}")
    assert status == 200
    assert headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    "path",
    [
        "/feeds/.x.tmp",
        "/feeds/%2Ex.tmp",  # the same name, percent-encoded
        "/.index.html.abc.tmp",
        "/feeds/.all.json.abc.tmp",
        "/.git/config",
        "/%2Egit/config",  # public/ may be a git checkout (GitHub Pages)
    ],
)
def test_temp_files_and_dotfiles_are_not_served(site: tuple[Workspace, int], path: str) -> None:
    ws, port = site
    for name in (".x.tmp", ".all.json.abc.tmp"):
        (ws.public / "feeds" / name).write_text('{"half": ')
    (ws.public / ".index.html.abc.tmp").write_text("<html>")
    (ws.public / ".git").mkdir(exist_ok=True)
    (ws.public / ".git" / "config").write_text('{"half": [remote "origin"]')
    status, _headers, body = request(port, path)
    assert status == 404, body[:200]
    assert b'{"half": ' not in body


@pytest.mark.parametrize("path", ["/feeds/", "/feeds", "/papers/", "/topics/"])
def test_no_directory_listings(site: tuple[Workspace, int], path: str) -> None:
    _ws, port = site
    status, _headers, body = request(port, path)
    assert status == 404
    assert b".html" not in body
    assert b".xml" not in body


@pytest.mark.parametrize(
    "path",
    [
        "/../state/state.sqlite3",
        "/%2e%2e/state/state.sqlite3",
        "/feeds/..%2f..%2fstate/state.sqlite3",
    ],
)
def test_nothing_outside_public_is_served(site: tuple[Workspace, int], path: str) -> None:
    ws, port = site
    assert ws.state.is_file()
    status, _headers, body = request(port, path)
    assert status == 404
    assert not body.startswith(b"SQLite format")


def test_after_a_change_the_old_validators_get_200(tmp_path: Path) -> None:
    ws = published(tmp_path / "ws")
    proc, port = start_serve(ws.public, ws.root)
    try:
        _status, headers, old = request(port, "/feeds/all.atom.xml")
        etag, date = headers["etag"], headers["last-modified"]
        assert request(port, "/feeds/all.atom.xml", {"If-None-Match": etag})[0] == 304
        # Last-Modified counts whole seconds: let the next write fall in a later one.
        mtime = (ws.public / "feeds" / "all.atom.xml").stat().st_mtime
        while int(time.time()) <= int(mtime):
            time.sleep(0.05)
        shutil.copy2(SEEDS[1], ws.inbox / SEEDS[1].name)
        r = run_feeds(ws.root, "run", *ws.cli_args())
        assert r.returncode == 0, r.stderr

        status, headers, new = request(port, "/feeds/all.atom.xml", {"If-None-Match": etag})
        assert status == 200
        assert new != old
        assert new == (ws.public / "feeds" / "all.atom.xml").read_bytes()
        assert headers["etag"] != etag
        assert request(port, "/feeds/all.atom.xml", {"If-Modified-Since": date})[0] == 200
        assert request(port, "/feeds/all.atom.xml", {"If-None-Match": headers["etag"]})[0] == 304
    finally:
        stop(proc)


@pytest.mark.parametrize("made", [False, True], ids=["missing", "empty"])
def test_serve_without_a_published_folder_fails_clearly(tmp_path: Path, made: bool) -> None:
    folder = tmp_path / "public"
    if made:
        folder.mkdir()
    r = run_feeds(tmp_path, "serve", "--public", str(folder), "--port", "0", timeout=30)
    assert r.returncode != 0
    assert "index.html not found" in r.stderr
    assert "feeds run" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_port_in_use_fails_clearly(site: tuple[Workspace, int]) -> None:
    ws, port = site
    r = run_feeds(ws.root, "serve", "--public", str(ws.public), "--port", str(port), timeout=30)
    assert r.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr
    assert "Traceback" not in r.stderr


def test_commands_that_send_nothing_need_no_alert_secrets(tmp_path: Path) -> None:
    """serve, status and check work with the variables of every alert unset (as under a
    shell that never loaded the env file): only sending needs them."""
    ws = published(tmp_path / "ws")
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        'alerts:\n  - to: "mailto://${NO_USER_HERE}:${NO_PASSWORD_HERE}@smtp.example.org"\n',
        encoding="utf-8",
    )
    common = ["--settings", str(settings), "--subscriptions", str(ws.subscriptions),
              "--state", str(ws.state)]  # fmt: skip
    for command in ("status", "check"):
        r = subprocess.run([sys.executable, "-m", "feeds", command, *common], cwd=ws.root,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert r.returncode == 0, (command, r.stderr)
    proc, port = start_serve(ws.public, ws.root, "--settings", str(settings))
    try:
        assert request(port, "/feeds.opml")[0] == 200
    finally:
        stop(proc)
