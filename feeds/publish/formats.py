"""The feed formats, one entry each: a new format is one more entry here (its name, file
suffix, media type, labels and writer), and the paths, the pages' <link>s and subscribe
lists, `feeds serve`'s content types, the publish and render.render all follow. Data only:
imported by a run that has nothing to render."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    name: str  # in code, options and element ids
    suffix: str  # feeds/<id>.<suffix>
    media_type: str  # served (with charset=utf-8) and named in the pages' <link>s
    label: str  # in a <link>'s title: "Speculative decoding (Atom)"
    long_label: str  # on a topic page's list of addresses
    discovery: int  # the place of its <link> on pages: readers that take the first take Atom
    writer: str  # which of render.py's writers makes it: "feedgen" (RSS, Atom) or "json"


# In the order a topic page lists them for subscribing: most readers take RSS.
FEED_FORMATS = (
    Format("rss", "rss.xml", "application/rss+xml", "RSS", "RSS", 2, "feedgen"),
    Format("atom", "atom.xml", "application/atom+xml", "Atom", "Atom", 1, "feedgen"),
    Format("json", "json", "application/feed+json", "JSON", "JSON Feed", 3, "json"),
)
BY_NAME = {f.name: f for f in FEED_FORMATS}
DISCOVERY = tuple(sorted(FEED_FORMATS, key=lambda f: f.discovery))
