"""`feeds serve`: public/ over HTTP on this machine, for a feed reader (stdlib http.server)."""

from __future__ import annotations

import email.utils
import os
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from pathlib import Path
from typing import Any
from urllib.parse import unquote

TYPES = (
    (".rss.xml", "application/rss+xml; charset=utf-8"),
    (".atom.xml", "application/atom+xml; charset=utf-8"),
    (".opml", "text/x-opml; charset=utf-8"),
    (".html", "text/html; charset=utf-8"),
    (".css", "text/css; charset=utf-8"),
    (".xml", "application/xml; charset=utf-8"),
)


def etag_of(st: os.stat_result) -> str:
    """Return a strong validator from what identifies a version of the file."""
    return f'"{st.st_size:x}-{st.st_mtime_ns:x}"'


class Handler(SimpleHTTPRequestHandler):
    """Static files with feed content types, ETag / Last-Modified and 304 answers."""

    server_version = "paperfeeds"
    _etag: str | None = None

    def log_message(self, format: str, *args: Any) -> None:
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def guess_type(self, path: str | os.PathLike[str]) -> str:
        name = str(path)
        if name.endswith(".json"):
            feed = os.path.basename(os.path.dirname(name)) == "feeds"
            return "application/feed+json; charset=utf-8" if feed else "application/json"
        for suffix, ctype in TYPES:
            if name.endswith(suffix):
                return ctype
        return super().guess_type(path)

    def send_head(self) -> BufferedIOBase | None:  # type: ignore[override]
        self._etag = None
        path = Path(self.translate_path(self.path))
        wanted_path = unquote(self.path.split("?", 1)[0].split("#", 1)[0])
        if any(part.startswith(".") for part in Path(wanted_path).parts):
            self.send_error(404)  # temp files of a publish in progress, dotfiles
            return None
        if path.is_dir() and not (path / "index.html").is_file():
            self.send_error(404)  # no directory listings
            return None
        if path.is_dir():
            path = path / "index.html"
        if path.is_file():
            st = path.stat()
            self._etag = etag_of(st)
            wanted = self.headers.get("If-None-Match")
            if wanted and (
                wanted.strip() == "*" or self._etag in (t.strip() for t in wanted.split(","))
            ):
                self.send_response(304)
                self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
                self.end_headers()
                return None
        return super().send_head()  # type: ignore[return-value]  # also does If-Modified-Since

    def end_headers(self) -> None:
        if self._etag:
            self.send_header("ETag", self._etag)
            self.send_header("Cache-Control", "no-cache")  # readers revalidate: 304 is cheap
        super().end_headers()


def make_server(public: Path, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    handler = partial(Handler, directory=str(public))
    return ThreadingHTTPServer((host, port), handler)
