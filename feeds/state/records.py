"""What the state's queries return: typed records.

Named tuples where rows are read by the million (reading-list rows, feed items, paper
pages, parts of the history): a tuple is made in C, a dataclass in Python. Frozen
dataclasses for the rest."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

# Only named in annotations: a run with nothing to do reads its last run without them.
if TYPE_CHECKING:
    from feeds.model import Hit, Link, Paper


class ListRow(NamedTuple):
    """A paper's line in a topic's reading list: what the line shows."""

    paper_id: str
    title: str
    title_zh: str | None
    venue: str | None
    entered: str  # when the paper entered the topic: UTC, ISO 8601 (the day is [:10])
    hits: tuple[Hit, ...]


class MemberItem(NamedTuple):
    """A paper of a topic as its feeds carry it."""

    paper: Paper
    entered: datetime
    hits: tuple[Hit, ...]


class PaperPage(NamedTuple):
    """What a paper's page shows: the paper, when first seen, its links, its topics."""

    paper: Paper
    first_seen: datetime
    links: tuple[Link, ...]
    topics: list[tuple[str, tuple[Hit, ...]]]  # (topic id, hits)


class SeqRange(NamedTuple):
    """Papers of a range of arrival order: first seq, the seq after the last, how many."""

    first: int
    end: int
    papers: int


@dataclass(frozen=True)
class UrlCheck:
    """One check of a URL (whatever papers share it) and when to check it again."""

    url: str
    status: str
    http_status: int | None
    final_url: str | None
    note: str | None
    checked: datetime
    due: datetime
    failures: int  # failed checks in a row
    dns_failing_since: datetime | None  # the name has not resolved since


@dataclass(frozen=True)
class UrlHistory:
    """What the next check of a URL builds on."""

    failures: int = 0
    dns_failing_since: datetime | None = None


@dataclass(frozen=True)
class Rejected:
    """A digest rejected as a whole."""

    name: str
    seen: datetime
    reason: str


@dataclass(frozen=True)
class LastRun:
    started: datetime
    finished: datetime | None  # None: it did not finish (killed, or still running)
    summary: dict[str, Any]  # the run's summary as `feeds run --json` prints it


@dataclass(frozen=True)
class Stored:
    """What storing a digest's papers did (see Store.put_papers)."""

    counts: dict[str, int]  # how many papers were "new", "changed", "same"
    # (line, the paper stored, this record): one title, no author in common. The two are
    # kept as one paper; what the record says beyond the stored paper is not used.
    collisions: tuple[tuple[int, Paper, Paper], ...] = ()
    # Papers read again that no other digest holds: their links from digests are those of
    # the new reading alone (see Store.add_links).
    reread_alone: frozenset[str] = frozenset()


@dataclass(frozen=True)
class AlertRecord:
    """What the state keeps of an alert destination (see feeds.alerts)."""

    key: str  # a hash of the destination as configured
    shown: str  # service and host
    watermark: datetime  # papers that entered its topics after this are pending
    last_sent: datetime | None = None
    failures: int = 0
    next_try: datetime | None = None
    error: str | None = None


class AlertEntry(NamedTuple):
    """A membership an alert announces: a paper that entered a topic."""

    topic_id: str
    paper_id: str
    entered: datetime
    hits: tuple[Hit, ...]
