"""What counts as a web address: the one rule for what is fetched (feeds.net) and what is
linked to (feeds.publish). Pure."""

from __future__ import annotations

from urllib.parse import urlsplit


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
