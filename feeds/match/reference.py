"""The reference matcher: every term of every topic searched for in every paper, the
straightforward way. Slow and obvious on purpose: the fast matcher (feeds.match.fast) must give
exactly what this gives, and tests hold it to that on random inputs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from feeds.match.fields import paper_fields
from feeds.match.terms import Term, compile_term
from feeds.model import Hit, Paper
from feeds.text import fold, person_key, strip_accents
from feeds.topics import Criteria


class TopicMatcher:
    """The compiled rules of one topic, each term searched for by its regular expression."""

    def __init__(self, criteria: Criteria) -> None:
        self.criteria = criteria
        self.any = tuple(compile_term(t) for t in criteria.any)
        self.all = tuple(tuple(compile_term(t) for t in group) for group in criteria.all)
        self.none = tuple(compile_term(t) for t in criteria.none)
        self.institutions = tuple(compile_term(strip_accents(t)) for t in criteria.institutions)
        self.authors = {person_key(a): a for a in criteria.authors}
        self.venues = {fold(v).strip() for v in criteria.venues}

    @property
    def terms(self) -> tuple[Term, ...]:
        return (*self.any, *(t for g in self.all for t in g), *self.none)

    def _hits(self, terms: Iterable[Term], fields: dict[str, str]) -> list[Hit]:
        names = self.criteria.fields
        return [Hit(t.text, n) for t in terms for n in names if t.search(fields[n])]

    def match(self, paper: Paper, fields: dict[str, str] | None = None) -> tuple[Hit, ...] | None:
        """Return the hits that make the paper match, or None when it does not match."""
        c = self.criteria
        fields = fields if fields is not None else paper_fields(paper)
        hits: list[Hit] = []
        if self.venues:
            if fold(paper.venue or "").strip() not in self.venues:
                return None
            hits.append(Hit(paper.venue or "", "venue"))
        if self.authors:
            named = [self.authors[k] for a in paper.authors if (k := person_key(a)) in self.authors]
            if not named:
                return None
            hits.extend(Hit(a, "authors") for a in named)
        if self.institutions:
            text = strip_accents(fields["institutions"])
            found = [t.text for t in self.institutions if t.search(text)]
            if not found:
                return None
            hits.extend(Hit(t, "institutions") for t in found)
        if c.any:
            any_hits = self._hits(self.any, fields)
            if not any_hits:
                return None
            hits.extend(any_hits)
        for group in self.all:
            group_hits = self._hits(group, fields)
            if not group_hits:
                return None
            hits.extend(group_hits)
        if self.none and self._hits(self.none, fields):
            return None
        return tuple(dict.fromkeys(hits))  # de-duplicated, order kept


def match_papers(
    matchers: Sequence[tuple[str, TopicMatcher]], papers: Iterable[Paper]
) -> Iterable[tuple[str, str, tuple[Hit, ...]]]:
    """Yield (topic id, paper id, hits) for every paper that matches a topic.

    The straightforward way: every term of every topic searched for in every paper. The
    pipeline uses Matcher, which must give exactly the same (a test compares them).
    """
    for paper in papers:
        fields = paper_fields(paper)
        for topic_id, matcher in matchers:
            hits = matcher.match(paper, fields)
            if hits is not None:
                yield topic_id, paper.paper_id, hits
