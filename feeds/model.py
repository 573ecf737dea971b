"""The data that travels between the stops of the pipeline: frozen and typed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Literal, NamedTuple

LinkKind = Literal["code", "project", "paper", "video", "venue", "other"]
LinkStatus = Literal["ok", "redirected", "dead", "error", "blocked", "unchecked"]


@dataclass(frozen=True)
class Institution:
    name: str
    name_zh: str | None = None


@dataclass(frozen=True)
class Paper:
    """One paper as a digest describes it; identified by its normalized English title."""

    paper_id: str
    title: str
    title_zh: str | None = None
    authors: tuple[str, ...] = ()
    institutions: tuple[Institution, ...] = ()
    summary: str | None = None
    comments: str | None = None
    journal_ref: str | None = None
    venue: str | None = None
    abstract: str | None = None  # English, from arXiv (a digest has the AI summary only)
    categories: tuple[str, ...] = ()  # arXiv's, the primary first
    arxiv_id: str | None = None  # without its version


@dataclass(frozen=True)
class LibraryItem:
    """An item of a library: what a topic compares papers with, and knows them by."""

    title: str  # LaTeX decoded
    abstract: str | None = None
    doi: str | None = None  # lower case
    arxiv_id: str | None = None  # without version
    line: int = 0  # where it starts in its file

    @property
    def text(self) -> str:
        """What the item is compared by: its title and abstract."""
        return f"{self.title}\n{self.abstract}" if self.abstract else self.title

    def names(self) -> Iterator[str]:
        """Yield what names the item's paper: `id:` its title's paper id, `arxiv:`, `doi:`
        (see Library.known)."""
        from feeds.text import paper_id

        yield f"id:{paper_id(self.title)}"
        if self.arxiv_id:
            yield f"arxiv:{self.arxiv_id}"
        if self.doi:
            yield f"doi:{self.doi}"


@dataclass(frozen=True)
class Library:
    """A library file as a topic names it: its items, and what was skipped and why."""

    path: str  # as the subscriptions file gives it
    line: int  # of the `library:` entry in the subscriptions file
    items: tuple[LibraryItem, ...]
    skipped: tuple[Diagnostic, ...] = ()  # file:line: why (no title; could not be read)
    read: int = 0  # entries found, skipped ones included
    # Where the file is (resolved): the config is read again when it changes. Not part of
    # what decides the topic's papers (the items are), so moving the folder re-matches none.
    file: str = field(default="", compare=False, repr=False)
    # The file's stamp from before it was read (feeds.cache.stamp_of): a change made while
    # it was read is one the next run sees.
    stamp: tuple[int, ...] | None = field(default=None, compare=False, repr=False)

    def known(self) -> frozenset[str]:
        """Return what names the papers already in the library (see LibraryItem.names)."""
        return frozenset(k for item in self.items for k in item.names())


@dataclass(frozen=True)
class Diagnostic:
    """A problem found in an input, with where it is."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class ParsedDigest:
    venue: str | None
    papers: tuple[tuple[int, Paper], ...]  # (line of the record's title, paper)
    diagnostics: tuple[Diagnostic, ...] = ()


@dataclass(frozen=True)
class Link:
    url: str
    kind: LinkKind
    source: str = "digest"
    status: LinkStatus = "unchecked"
    final_url: str | None = None
    http_status: int | None = None
    note: str | None = None  # why it is in error, or what is notable ("archived")


class Hit(NamedTuple):
    """A term that matched, and the field it matched in.

    A named tuple rather than a dataclass: hits are made for every match and compared and
    hashed by the million (a tuple of strings hashes in C)."""

    term: str
    field: str


@dataclass(frozen=True)
class Item:
    """A paper as it appears in one feed."""

    paper: Paper
    entered: datetime
    links: tuple[Link, ...] = ()
    matched: tuple[Hit, ...] = field(default=())


@dataclass(frozen=True)
class SourceState:
    """What we remember of a source between runs."""

    url: str
    etag: str | None = None
    last_modified: str | None = None
    last_ok: datetime | None = None  # last successful fetch (200 or 304)
    last_change: datetime | None = None  # last time its content was new
    failures: int = 0
    next_try: datetime | None = None
    error: str | None = None


def _combine(old: str | None, new: str | None) -> str | None:
    """Return both texts when each says something the other does not."""
    if not old or not new:
        return old or new
    if new in old:
        return old
    if old in new:
        return new
    return f"{old} | {new}"


def other_authors(old: Paper, new: Paper) -> bool:
    """Return True when two records with one title name no author in common: two papers
    under one title (a true collision), not one paper seen twice."""
    from feeds.text import person_key

    if not old.authors or not new.authors:
        return False
    return not {person_key(a) for a in old.authors} & {person_key(a) for a in new.authors}


def same_authors(old: Paper, new: Paper) -> bool:
    """Return True when two records name the same authors (in any order, accents and case
    aside): with the same Chinese title, one paper whose English title was revised."""
    from feeds.text import person_key

    return bool(old.authors) and (
        {person_key(a) for a in old.authors} == {person_key(a) for a in new.authors}
    )


def _text(value: object) -> str | None:
    """Return a field as the digest wrote it, near enough to tell whether it was cut short."""
    if isinstance(value, tuple):
        return ", ".join(
            f"{v.name}（{v.name_zh}）" if isinstance(v, Institution) and v.name_zh else
            v.name if isinstance(v, Institution) else str(v)
            for v in value
        )  # fmt: skip
    return value if isinstance(value, str) else None


def _cut_short(old: str | None, new: str | None) -> bool:
    """Return True when `old` is the start of `new`: a field read from a file that was
    still being written (a summary cut mid-sentence, `authors: [..., 'Ann Be']`)."""
    return bool(old and new and old != new and new.startswith(old))


def reread(old: Paper, new: Paper, *, only_there: bool) -> Paper:
    """Return a paper after the file it was read from was read again, changed (it was
    being written the first time): the new reading replaces what the first one gave.

    `only_there`: no other digest holds the paper, so everything known of it came from that
    file, and the new reading is all of it. Otherwise a field is replaced only where the
    stored value is the start of the new one (the first reading cut it short), and the rest
    merges as any later digest does: nothing another digest gave is lost.
    """
    if only_there:
        return replace(new, paper_id=old.paper_id)
    fuller = {f.name: getattr(new, f.name) for f in fields(new)
              if _cut_short(_text(getattr(old, f.name)), _text(getattr(new, f.name)))}  # fmt: skip
    return merge(replace(old, **fuller), new)


ARXIV = "arXiv"  # the venue of a paper that came from arXiv alone


def merge(old: Paper, new: Paper) -> Paper:
    """Return what is known of a paper after a later digest: gaps filled, nothing removed."""
    return Paper(
        paper_id=old.paper_id,
        title=old.title,
        title_zh=old.title_zh or new.title_zh,
        authors=old.authors or new.authors,
        institutions=old.institutions or new.institutions,
        summary=old.summary or new.summary,
        comments=_combine(old.comments, new.comments),
        journal_ref=_combine(old.journal_ref, new.journal_ref),
        # A digest names the venue a paper is in; arXiv, where it was posted, says less.
        venue=new.venue if old.venue in (None, ARXIV) and new.venue else old.venue,
        abstract=old.abstract or new.abstract,
        categories=old.categories or new.categories,
        arxiv_id=old.arxiv_id or new.arxiv_id,
    )
