"""The formats a topic is published in, one entry each: its feeds (feeds/<id>.<suffix>) and
its reading list for reference managers (topics/<id>.<suffix>). A new format is one more
entry here (its name, folder, file suffix, media type, labels and writer), and the paths,
the pages' <link>s and lists, `feeds serve`'s and the bucket's content types, and the
publish all follow. Data only: imported by a run that has nothing to render."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    name: str  # in code, options and element ids
    suffix: str  # <folder>/<id>.<suffix>
    media_type: str  # served (with charset=utf-8) and named in the pages' <link>s
    label: str  # in a <link>'s title: "Speculative decoding (Atom)"
    long_label: str  # on a topic page's list of addresses
    discovery: int  # the place of its <link> on pages: readers that take the first take Atom
    writer: str  # what makes it: render.py's "feedgen" (RSS, Atom) or "json"; cite.py's
    folder: str = "feeds"  # where in public/ its files are


# In the order a topic page lists them for subscribing: most readers take RSS.
FEED_FORMATS = (
    Format("rss", "rss.xml", "application/rss+xml", "RSS", "RSS", 2, "feedgen"),
    Format("atom", "atom.xml", "application/atom+xml", "Atom", "Atom", 1, "feedgen"),
    Format("json", "json", "application/feed+json", "JSON", "JSON Feed", 3, "json"),
)
# A topic's reading list (every paper, not only the feed's newest) for a reference manager,
# in the order a topic page names them.
LIST_FORMATS = (
    Format("bibtex", "bib", "application/x-bibtex", "BibTeX", "BibTeX", 0, "bibtex", "topics"),
    Format("ris", "ris", "application/x-research-info-systems", "RIS", "RIS", 0, "ris", "topics"),
)
ALL_FORMATS = FEED_FORMATS + LIST_FORMATS
BY_NAME = {f.name: f for f in ALL_FORMATS}
DISCOVERY = tuple(sorted(FEED_FORMATS, key=lambda f: f.discovery))
