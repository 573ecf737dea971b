"""How values are written in the state's rows and read back: timestamps, papers (their
lists as JSON), a membership's hits. Pure functions of values and rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

# The model's classes are imported where papers are made: a run with nothing to do makes
# none, and creating the classes costs it several milliseconds.
if TYPE_CHECKING:
    from feeds.model import Hit, Paper

# json.dumps(x, ensure_ascii=False), without making an encoder for every call.
json_text = json.JSONEncoder(ensure_ascii=False).encode


@lru_cache(maxsize=64)  # mostly the run's `now`: twice for every paper ingested
def ts(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="seconds")


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def opt_dt(text: str | None) -> datetime | None:
    return parse_ts(text) if text else None


def opt_ts(dt: datetime | None) -> str | None:
    return ts(dt) if dt else None


PAPER_COLS = "paper_id, title, title_zh, authors, institutions, summary, comments,"
PAPER_COLS += " journal_ref, venue, abstract, categories, arxiv_id"


def paper_row(p: Paper) -> tuple[Any, ...]:
    # Institutions field by field: asdict's deep copy costs more than the rest of the row.
    institutions = [{"name": i.name, "name_zh": i.name_zh} for i in p.institutions]
    return (
        p.paper_id, p.title, p.title_zh,
        json_text(list(p.authors)),
        json_text(institutions),
        p.summary, p.comments, p.journal_ref, p.venue,
        p.abstract, json_text(list(p.categories)), p.arxiv_id,
    )  # fmt: skip


def encode_hits(hits: Sequence[Hit]) -> str:
    """Return a membership's hits as the state stores them: JSON [[term, field], ...]."""
    return json_text([[h.term, h.field] for h in hits])


@lru_cache(maxsize=65536)
def hits_from(matched: str) -> tuple[Hit, ...]:
    """Decode a membership's hits; memberships mostly share them (a venue's, say)."""
    from feeds.model import Hit

    return tuple(Hit(t, f) for t, f in json.loads(matched))


def paper_from(row: Sequence[Any]) -> Paper:
    from feeds.model import Institution, Paper  # ~1 us a row: <1% of reading one

    (pid, title, title_zh, authors, institutions, summary, comments, journal_ref, venue,
     abstract, categories, arxiv_id) = row  # fmt: skip
    return Paper(
        paper_id=pid,
        title=title,
        title_zh=title_zh,
        authors=tuple(json.loads(authors)),
        institutions=tuple(Institution(**i) for i in json.loads(institutions)),
        summary=summary,
        comments=comments,
        journal_ref=journal_ref,
        venue=venue,
        abstract=abstract,
        categories=tuple(json.loads(categories)) if categories != "[]" else (),
        arxiv_id=arxiv_id,
    )
