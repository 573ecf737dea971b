"""What counts as a web address: the one rule for what is fetched (feeds.net) and what is
linked to (feeds.publish). Pure."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

# How to write a user name or password that the URL's own characters would cut short.
ENCODE_USERINFO = "write @ as %40, / as %2F, ? as %3F, # as %23 and : as %3A"


def http_url_problem(url: str) -> str | None:
    """Return why a text is not an absolute http(s) URL with a host, or None.

    Only such a URL is fetched, and only such a URL may be recorded where a page or feed
    will link to it (a `javascript:` or `data:` one would run in the reader's browser).
    The reason names the scheme, never the rest of the text.
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [IPv6] bracket, a host that NFKC changes
        return "not a valid URL (its host cannot be read)"
    try:
        parts.port  # noqa: B018 -- raises ValueError for a bad port
    except ValueError:
        return "not a valid URL (its port is not a number from 0 to 65535)"
    if parts.scheme not in ("http", "https"):
        return f"not an http(s) URL ({parts.scheme or 'no scheme'})"
    if not parts.hostname:
        return "no host in the URL"
    return None


def userinfo_unclear(url: str) -> bool:
    """Return True when where a URL's user information ends cannot be told for sure.

    Parsers disagree on a password written unencoded: libpq ends the user information at
    the first `@` and the host at the first `/` or `?`, Python's urlsplit at the last `@`
    and at `#` too, and a reader at the `@` it guesses. So a second `@`, one after the
    host, or a `#` anywhere means some part of the user information may stand where a
    host, a path or a query is shown.
    """
    rest = url.partition("://")[2]
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    return "#" in rest or rest[:end].count("@") > 1 or "@" in rest[end:]


def shown_url(url: str) -> str:
    """Return a URL as output shows it: its password as `***`; one whose user information
    cannot be told apart (see userinfo_unclear) or read at all as its scheme alone."""
    scheme = url.partition("://")[0]
    if userinfo_unclear(url):
        return f"{scheme}://…"
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
    except ValueError:  # `[::1` with no `]`: what it holds is not known to be safe to show
        return f"{scheme}://…"


def only_here(url: str) -> bool:
    """Return True when a URL's host is this machine (`localhost`, `127.0.0.1`, `[::1]`):
    a link to it opens nowhere else."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
