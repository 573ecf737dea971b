"""`feeds serve`: public/ over HTTP on this machine, for a feed reader (stdlib http.server)."""

from __future__ import annotations

import email.utils
import os
import re
import socket
import sys
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

from feeds.publish.formats import ALL_FORMATS

TYPES = (  # besides the feeds' own (see guess_type)
    (".opml", "text/x-opml; charset=utf-8"),
    (".html", "text/html; charset=utf-8"),
    (".css", "text/css; charset=utf-8"),
    (".xml", "application/xml; charset=utf-8"),
)


def etag_of(st: os.stat_result) -> str:
    """Return a strong validator from what identifies a version of the file."""
    return f'"{st.st_size:x}-{st.st_mtime_ns:x}"'


_ENTITY_TAG = re.compile(r'\s*(?:W/)?("[^"]*")\s*(?:,|$)')


def none_match_holds(header: str, etag: str) -> bool:
    """Return True when an If-None-Match header names this version (answer 304).

    Compared weakly, as HTTP says for If-None-Match (RFC 9110, 13.1.2): `W/"x"` and `"x"`
    are the same version. A cache may hold our strong tag as weak (a proxy that compresses
    it, say) and would otherwise get the whole file again on every request.
    """
    if header.strip() == "*":
        return True
    wanted = etag.removeprefix("W/")
    return any(m.group(1) == wanted for m in _ENTITY_TAG.finditer(header))


def site_file(root: str, url_path: str) -> str | None:
    """Return the real path of the file of the site under `root` that a request's path
    (percent-encoded, without its query) names, or None when there is none to serve.

    A path ending in `/` names its folder's index.html. None for a path that is not UTF-8
    or holds a NUL or a backslash (a separator elsewhere), for any segment starting with a
    dot (`..`; dotfiles; a publish's temp files), and for a name whose real path, symlinks
    followed, is not a file inside root's real path or is a dotfile there: public/ may hold
    links (a git checkout does) that must not serve the rest of the machine.
    """
    try:
        name = unquote_to_bytes(url_path).decode()
    except UnicodeDecodeError:
        return None
    parts = name.split("/")
    if parts[0] or "\0" in name or "\\" in name or any(p.startswith(".") for p in parts):
        return None  # parts[0]: the path must start with "/" ("*", absolute URLs do not)
    if name.endswith("/"):
        parts[-1] = "index.html"
    # realpath() does not raise for a missing name, a symlink loop or a name too long: what
    # comes out is checked, and isfile() says False for all of those.
    top = os.path.realpath(root)
    real = os.path.realpath(os.path.join(top, *parts))
    inside = os.path.relpath(real, top).split(os.sep)
    if inside[0] == os.pardir or any(p.startswith(".") for p in inside):
        return None
    return real if os.path.isfile(real) else None


class Handler(SimpleHTTPRequestHandler):
    """Static files with feed content types, ETag / Last-Modified and 304 answers."""

    server_version = "paperfeeds"
    timeout = 60  # seconds a connection may stay silent before it is closed
    _etag: str | None = None

    def log_message(self, format: str, *args: Any) -> None:
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def guess_type(self, path: str | os.PathLike[str]) -> str:
        name = str(path)
        folder = os.path.basename(os.path.dirname(name))  # search's index.json is no feed
        for f in ALL_FORMATS:
            if folder == f.folder and name.endswith("." + f.suffix):
                return f"{f.media_type}; charset=utf-8"
        if name.endswith(".json"):
            return "application/json"
        for suffix, ctype in TYPES:
            if name.endswith(suffix):
                return ctype
        return super().guess_type(path)

    def translate_path(self, path: str) -> str:
        """Return the real path of the file to serve, or "" (no file: a 404) for a path
        that site_file refuses; the stdlib's send_head opens what this gives."""
        return site_file(self.directory, self.url_path(path)) or ""

    @staticmethod
    def url_path(target: str) -> str:
        """Return the path of a request target, without its query or fragment."""
        return target.split("?", 1)[0].split("#", 1)[0]

    def send_head(self) -> BufferedIOBase | None:  # type: ignore[override]
        self._etag = None
        path = self.translate_path(self.path)
        if not path:
            wanted = self.url_path(self.path)
            if not wanted.endswith("/") and site_file(self.directory, wanted + "/"):
                # A folder with an index page, named without its slash: sent where the
                # page's relative links work, query kept. (Folders without one: 404.)
                self.send_response(HTTPStatus.MOVED_PERMANENTLY)
                self.send_header("Location", wanted + "/" + self.path[len(wanted) :])
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.send_error(HTTPStatus.NOT_FOUND)
            return None
        try:
            st = os.stat(path)
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND)  # removed since translate_path looked
            return None
        self._etag = etag_of(st)
        held = self.headers.get("If-None-Match")
        if held and none_match_holds(held, self._etag):
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
            self.end_headers()
            return None
        return super().send_head()  # type: ignore[return-value]  # also does If-Modified-Since

    def end_headers(self) -> None:
        if self._etag:
            self.send_header("ETag", self._etag)
            self.send_header("Cache-Control", "no-cache")  # readers revalidate: 304 is cheap
        super().end_headers()


class Server(ThreadingHTTPServer):
    """The stdlib's threading server, quiet about readers that hang up mid-answer."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return  # a reader closed the connection or went silent: nothing to report
        super().handle_error(request, client_address)


class IPv6Server(Server):
    address_family = socket.AF_INET6


def make_server(public: Path, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    handler = partial(Handler, directory=str(public))
    # The stdlib's server listens on IPv4 only: `--host ::1` could not be bound. Only an
    # IPv6 address switches; a name (`localhost`) stays on IPv4 as before, rather than on
    # whichever family it happens to resolve to first.
    server = IPv6Server if ":" in host else Server
    return server((host, port), handler)
