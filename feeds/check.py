"""What `feeds check` reports: per topic, what it matches among the stored papers. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from feeds.config import Topic
from feeds.match import TopicMatcher, paper_fields
from feeds.model import Paper
from feeds.text import strip_accents

EXAMPLES = 3
BROAD = 0.5  # a term topic matching more than this share of all papers is suspicious


@dataclass(frozen=True)
class TopicReport:
    id: str
    title: str
    matches: int
    examples: tuple[str, ...]
    unmatched_terms: tuple[str, ...]
    warnings: tuple[str, ...]


def check_topics(topics: Sequence[Topic], papers: Sequence[Paper]) -> list[TopicReport]:
    """Return, per topic, its match count, a few example titles and warnings."""
    fields = [paper_fields(p) for p in papers]
    reports = []
    for topic in topics:
        matcher = TopicMatcher(topic.criteria)
        matched = [
            p for p, f in zip(papers, fields, strict=True) if matcher.match(p, f) is not None
        ]
        unmatched = _unmatched_terms(matcher, fields)
        warnings = []
        c = topic.criteria
        if papers and not matched:
            warnings.append("matches none of the stored papers")
        elif (
            papers and (c.any or c.all) and len(matched) > BROAD * len(papers) and len(papers) >= 10
        ):
            warnings.append(f"matches {len(matched)} of {len(papers)} papers; is a term too broad?")
        if papers and unmatched:
            warnings.append("terms that match no stored paper: " + ", ".join(unmatched))
        reports.append(
            TopicReport(
                id=topic.id,
                title=topic.title,
                matches=len(matched),
                examples=tuple(p.title for p in matched[-EXAMPLES:][::-1]),  # newest first
                unmatched_terms=unmatched,
                warnings=tuple(warnings),
            )
        )
    return reports


def _unmatched_terms(matcher: TopicMatcher, fields: Sequence[dict[str, str]]) -> tuple[str, ...]:
    """Return the terms of a topic that occur in none of the papers (in the topic's fields)."""
    names = matcher.criteria.fields
    terms = [*matcher.any, *(t for group in matcher.all for t in group), *matcher.none]
    unmatched = [
        t.text for t in terms if not any(t.search(f[name]) for f in fields for name in names)
    ]
    unmatched += [
        t.text
        for t in matcher.institutions
        if not any(t.search(strip_accents(f["institutions"])) for f in fields)
    ]
    return tuple(dict.fromkeys(unmatched))
