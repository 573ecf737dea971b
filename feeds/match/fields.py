"""A paper's matchable fields as text, and normalized as terms are searched in. Pure."""

from __future__ import annotations

from collections.abc import Callable

from feeds.match.terms import normalize
from feeds.model import Paper


def _institutions(p: Paper) -> str:
    return " ; ".join([i.name + " ; " + i.name_zh if i.name_zh else i.name for i in p.institutions])


def _comments(p: Paper) -> str:
    if p.comments and p.journal_ref:
        return p.comments + " ; " + p.journal_ref
    return p.comments or p.journal_ref or ""


def _title(p: Paper) -> str:
    return p.title + " ; " + (p.title_zh or "")


def _summary(p: Paper) -> str:
    # The digest's AI summary (Chinese) and arXiv's abstract (English): either may match.
    if p.abstract:
        return (p.summary or "") + " ; " + p.abstract
    return p.summary or ""


def _authors(p: Paper) -> str:
    return " ; ".join(p.authors)


def _venue(p: Paper) -> str:
    return p.venue or ""


def _categories(p: Paper) -> str:
    return " ; ".join(p.categories)


# Each matchable field of a paper, before normalizing. Named functions, not lambdas: a
# built Matcher holds some of them and is pickled (see feeds.match.cache.cached_matcher).
RAW_FIELDS: dict[str, Callable[[Paper], str]] = {
    "title": _title,
    "summary": _summary,
    "authors": _authors,
    "institutions": _institutions,
    "comments": _comments,
    "venue": _venue,
    "categories": _categories,
}


def paper_fields(paper: Paper) -> dict[str, str]:
    """Return each matchable field of a paper as one normalized string."""
    return {name: normalize(raw(paper)) for name, raw in RAW_FIELDS.items()}
