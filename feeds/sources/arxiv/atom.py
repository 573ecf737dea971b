"""Read the arXiv API's answers (Atom 1.0 with `opensearch:` and `arxiv:` elements).

Pure: bytes in, a Page out. The answer is parsed by the standard library's parser, and the
XML attacks are closed there rather than by a library (defusedxml is not installed): expat
2.4.1 and newer bounds how far entities may amplify a document (no billion laughs, no
quadratic blow-up), external entities are never fetched (they are "undefined"), and a
document type declaration is refused outright, since arXiv never sends one and it is where
every entity trick starts.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from feeds.errors import FeedsError
from feeds.text import clean_xml

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"

# `http://arxiv.org/abs/2412.01234v2`, `http://arxiv.org/abs/cond-mat/0603029v1` (before
# April 2007 an id was the archive, sometimes with its subject class, and seven digits).
_ID = re.compile(
    r"https?://(?:export\.)?arxiv\.org/abs/"
    r"(?P<id>\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/\d{7})(?:v(?P<version>\d+))?"
)
_ERROR_ID = re.compile(r"https?://(?:export\.)?arxiv\.org/api/errors")
# A new paragraph of an abstract: a blank line, or a line that starts indented (arXiv keeps
# the authors' indented lines; the API wraps the rest at ~80 columns with bare newlines).
_PARAGRAPH = re.compile(r"\n\s*\n|\n[ \t]+")


class ArxivError(FeedsError):
    """The arXiv API could not be used this time (see the subclasses)."""


class BadAnswer(ArxivError):
    """An answer that is not the API's Atom: malformed, hostile, an HTML error page."""


class ApiError(ArxivError):
    """The API answered with its error feed: it could not run the query (the message is
    arXiv's own, e.g. "incorrect id format for 1234")."""


class Author(NamedTuple):
    name: str
    affiliations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    """One paper as the API describes it (texts with their whitespace collapsed)."""

    arxiv_id: str  # without version: 2412.01234, cond-mat/0603029
    version: int
    title: str
    abstract: str  # paragraphs separated by a blank line
    authors: tuple[Author, ...]
    comment: str | None
    journal_ref: str | None
    doi: str | None
    categories: tuple[str, ...]  # the primary one first
    primary_category: str | None
    published: datetime  # when version 1 was submitted (what sortBy=submittedDate sorts by)
    updated: datetime  # when the latest version was


@dataclass(frozen=True)
class Page:
    """One answer: where it starts in the query's results, of how many, and its entries."""

    total: int  # opensearch:totalResults
    start: int  # opensearch:startIndex
    entries: tuple[Entry, ...]
    per_page: int | None = None  # opensearch:itemsPerPage
    problems: tuple[str, ...] = ()  # one per <entry> that could not be read (left out)

    @property
    def size(self) -> int:
        """The entries in the answer, read or not: what offsets into the results count."""
        return len(self.entries) + len(self.problems)


class _NoDoctype(ET.TreeBuilder):
    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise BadAnswer("the answer declares a document type (arXiv sends none): refused")


def parse(content: bytes) -> Page:
    """Return the page an arXiv API answer holds.

    Raise BadAnswer for anything but the API's Atom, and ApiError for its error feed.
    Entries that cannot be read (no arXiv id, no date) are left out and named in
    `problems`; the rest of the page counts.
    """
    parser = ET.XMLParser(target=_NoDoctype())
    try:
        parser.feed(content)
        root = parser.close()
    except ET.ParseError as e:
        raise BadAnswer(f"the answer is not well-formed XML: {e}") from e
    if root.tag != f"{ATOM}feed":
        raise BadAnswer(f"the answer is not an Atom feed (its root is <{_local(root.tag)}>)")
    elements = root.findall(f"{ATOM}entry")
    for element in elements:
        if _ERROR_ID.match((element.findtext(f"{ATOM}id") or "").strip()):
            message = _collapse(element.findtext(f"{ATOM}summary")) or "an unnamed error"
            raise ApiError(f"the arXiv API refused the query: {message}")
    total = _count(root, "totalResults")
    start = _count(root, "startIndex")
    if total is None or start is None:
        # Without them the end of the results cannot be told from a short page.
        raise BadAnswer("the answer has no opensearch:totalResults or startIndex")
    entries: list[Entry] = []
    problems: list[str] = []
    for position, element in enumerate(elements, start=start):
        try:
            entries.append(_entry(element))
        except ValueError as e:
            problems.append(f"entry {position} of the results: {e}")
    return Page(total, start, tuple(entries), _count(root, "itemsPerPage"), tuple(problems))


def _entry(element: ET.Element) -> Entry:
    raw_id = (element.findtext(f"{ATOM}id") or "").strip()
    m = _ID.fullmatch(raw_id)
    if m is None:
        raise ValueError(f"no arXiv id in <id> ({raw_id[:80]!r})")
    title = _collapse(element.findtext(f"{ATOM}title"))
    if not title:
        raise ValueError(f"{m['id']} has no title")
    authors = []
    for author in element.findall(f"{ATOM}author"):
        name = _collapse(author.findtext(f"{ATOM}name"))
        if name:
            found = (_collapse(a.text) for a in author.findall(f"{ARXIV}affiliation"))
            authors.append(Author(name, tuple(a for a in found if a)))
    published = _date(element, "published")
    if published is None:
        raise ValueError(f"{m['id']} has no <published> date")
    primary = element.find(f"{ARXIV}primary_category")
    primary_term = _collapse(primary.get("term")) if primary is not None else ""
    terms = (_collapse(c.get("term")) for c in element.findall(f"{ATOM}category"))
    categories = tuple(dict.fromkeys(t for t in (primary_term, *terms) if t))
    return Entry(
        arxiv_id=m["id"],
        version=int(m["version"] or 1),  # the API always names it; without one, the first
        title=title,
        abstract=_paragraphs(element.findtext(f"{ATOM}summary") or ""),
        authors=tuple(authors),
        comment=_collapse(element.findtext(f"{ARXIV}comment")) or None,
        journal_ref=_collapse(element.findtext(f"{ARXIV}journal_ref")) or None,
        doi=_collapse(element.findtext(f"{ARXIV}doi")) or None,
        categories=categories,
        primary_category=primary_term or (categories[0] if categories else None),
        published=published,
        updated=_date(element, "updated") or published,
    )


def _clean(text: str) -> str:
    """Return text without the characters feeds may not carry (C1 controls arrive as
    character references, which XML 1.0 allows)."""
    return text if text.isascii() and "\x7f" not in text else clean_xml(text)


def _collapse(text: str | None) -> str:
    """Return text on one line with single spaces (the API wraps titles and comments)."""
    return " ".join(_clean(text).split()) if text else ""


def _paragraphs(text: str) -> str:
    parts = (" ".join(p.split()) for p in _PARAGRAPH.split(_clean(text).strip()))
    return "\n\n".join(p for p in parts if p)


def _date(element: ET.Element, name: str) -> datetime | None:
    """Return the element's date in UTC, None when it has none; raise ValueError for text
    that is not a date."""
    text = (element.findtext(f"{ATOM}{name}") or "").strip()
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"<{name}> is not a date ({text[:40]!r})") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# arXiv holds a few million papers: a count of more digits is no answer of its (and int()
# refuses more than 4,300 digits with a ValueError that no caller expects).
_COUNT_DIGITS = 12


def _count(root: ET.Element, name: str) -> int | None:
    text = (root.findtext(f"{OPENSEARCH}{name}") or "").strip()
    if not (text.isascii() and text.isdigit()):
        return None
    if len(text) > _COUNT_DIGITS:
        raise BadAnswer(f"opensearch:{name} is no count of arXiv's ({len(text):,} digits)")
    return int(text)


def _local(tag: str) -> str:
    return tag.rpartition("}")[2][:40]
