"""Where each published file lives in public/, relative to it: plain functions, imported
also by a run that has nothing to render (it checks that these files are still there)."""

from __future__ import annotations

from feeds.publish.formats import BY_NAME, FEED_FORMATS, LIST_FORMATS

ALL = "all"  # the feed of every paper; its reading list is topics/all.html
FORMATS = tuple(f.name for f in FEED_FORMATS)  # every feed is written in each
LISTS = tuple(f.name for f in LIST_FORMATS)  # and every reading list
# The all-papers reading list is paged by this many papers, whatever `site.page_size` says
# (that setting is a topic's): the list of every paper is long, and its parts stay put.
ALL_PAGE_SIZE = 500
SEARCH_PAGE = "search.html"  # written by any publish that writes
ICON = "favicon.svg"  # the site's icon, which every page names: written likewise


def paper_path(paper_id: str) -> str:
    return f"papers/{paper_id}.html"


def feed_path(feed_id: str, fmt: str) -> str:
    """Return where a topic's file of a format is: feeds/<id>.atom.xml, topics/<id>.bib."""
    f = BY_NAME[fmt]
    return f"{f.folder}/{feed_id}.{f.suffix}"


def archive_path(feed_id: str, page: int) -> str:
    """Return archive page `page` of a topic's reading list (1 holds the oldest papers)."""
    return f"topics/{feed_id}/{page}.html"


def pages(count: int, size: int) -> tuple[int, int]:
    """Return (papers on the front page, archive pages) for a reading list of `count`.

    Archive pages hold `size` papers each, counted from the oldest, so a full one never
    changes when new papers arrive; the front page holds the newest 1..size.
    """
    archives = (count - 1) // size if count else 0
    return count - archives * size, archives


def topic_path(feed_id: str) -> str:
    """Return the page of a feed: its reading list (`all`'s lists every paper)."""
    return f"topics/{feed_id}.html"


def topic_files(feed_id: str) -> tuple[str, ...]:
    """Return the files of a topic (or `all`) that every publish keeps current: its feeds,
    its reading list's front page and its reading list for reference managers."""
    return (topic_path(feed_id), *(feed_path(feed_id, fmt) for fmt in (*FORMATS, *LISTS)))
