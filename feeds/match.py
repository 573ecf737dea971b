"""Decide which papers belong to which topics, and say why. Pure: no I/O, no clock.

Term rules (SPEC "Subscriptions"): case-insensitive after NFKC; Latin terms match whole
words with space, hyphen and underscore alike; a CJK character next to a Latin term is a
word boundary; a trailing `*` makes a prefix; terms with CJK characters match as
substrings; `/.../` is a regular expression.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from feeds.model import Hit, Paper
from feeds.text import fold, has_cjk, strip_accents

# Letters and digits of alphabetic scripts. CJK is deliberately absent: `扩散LLM推理`
# contains the word `LLM`, which Python's \b (CJK counts as \w) would not find.
_WORD = r"[0-9a-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff\u1e00-\u1eff]"
_SEP = r"[\s\-_\u2010-\u2015]+"
_SPLIT = re.compile(_SEP)

FIELDS = ("title", "summary", "authors", "institutions", "comments", "venue")
DEFAULT_FIELDS = ("title", "summary")


@dataclass(frozen=True)
class Term:
    """A compiled term: what the user wrote and the pattern that finds it in folded text."""

    text: str
    pattern: re.Pattern[str]

    def search(self, folded: str) -> bool:
        return self.pattern.search(folded) is not None


def compile_term(text: str) -> Term:
    """Return the compiled form of one subscription term; raise re.error for a bad regex."""
    raw = text.strip()
    if len(raw) >= 2 and raw.startswith("/") and raw.endswith("/"):
        return Term(text, re.compile(raw[1:-1], re.IGNORECASE))
    term = fold(raw)
    if has_cjk(term):
        return Term(text, re.compile(re.escape(term)))
    prefix = term.endswith("*")
    tokens = [t for t in _SPLIT.split(term.rstrip("*")) if t]
    if not tokens:
        raise re.error(f"empty term {text!r}")
    body = _SEP.join(re.escape(t) for t in tokens)
    left = f"(?<!{_WORD})" if re.match(_WORD, tokens[0]) else ""
    right = f"(?!{_WORD})" if not prefix and re.search(_WORD + "$", tokens[-1]) else ""
    return Term(text, re.compile(left + body + right))


def person_key(name: str) -> str:
    """Return a name in the form authors compare in: no accents, no case, single spaces."""
    return " ".join(strip_accents(fold(name)).replace("-", " ").split())


@dataclass(frozen=True)
class Criteria:
    """A topic's matching rules, as validated config gives them."""

    any: tuple[str, ...] = ()
    all: tuple[tuple[str, ...], ...] = ()
    none: tuple[str, ...] = ()
    fields: tuple[str, ...] = DEFAULT_FIELDS
    authors: tuple[str, ...] = ()
    institutions: tuple[str, ...] = ()
    venues: tuple[str, ...] = ()

    @property
    def positive(self) -> bool:
        return bool(self.any or self.all or self.authors or self.institutions or self.venues)


def _fold_text(text: str) -> str:
    # Titles carry LaTeX math ("$k$-Means"); without the dollars, `k-means` finds it.
    return fold(text.replace("$", ""))


def paper_fields(paper: Paper) -> dict[str, str]:
    """Return each matchable field of a paper as one folded string."""
    institutions = " ; ".join(
        i.name + (f" ; {i.name_zh}" if i.name_zh else "") for i in paper.institutions
    )
    comments = " ; ".join(x for x in (paper.comments, paper.journal_ref) if x)
    return {
        "title": _fold_text(paper.title + " ; " + (paper.title_zh or "")),
        "summary": _fold_text(paper.summary or ""),
        "authors": fold(" ; ".join(paper.authors)),
        "institutions": fold(institutions),
        "comments": _fold_text(comments),
        "venue": fold(paper.venue or ""),
    }


class TopicMatcher:
    """The compiled rules of one topic."""

    def __init__(self, criteria: Criteria) -> None:
        self.criteria = criteria
        self.any = tuple(compile_term(t) for t in criteria.any)
        self.all = tuple(tuple(compile_term(t) for t in group) for group in criteria.all)
        self.none = tuple(compile_term(t) for t in criteria.none)
        self.institutions = tuple(compile_term(strip_accents(t)) for t in criteria.institutions)
        self.authors = {person_key(a): a for a in criteria.authors}
        self.venues = {fold(v).strip() for v in criteria.venues}

    def _hits(self, terms: Iterable[Term], fields: dict[str, str]) -> list[Hit]:
        return [
            Hit(term.text, name)
            for term in terms
            for name in self.criteria.fields
            if term.search(fields[name])
        ]

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
            found = [self.authors[k] for a in paper.authors if (k := person_key(a)) in self.authors]
            if not found:
                return None
            hits.extend(Hit(a, "authors") for a in found)
        if self.institutions:
            text = strip_accents(fields["institutions"])
            found_i = [t.text for t in self.institutions if t.search(text)]
            if not found_i:
                return None
            hits.extend(Hit(t, "institutions") for t in found_i)
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
    """Yield (topic id, paper id, hits) for every paper that matches a topic."""
    for paper in papers:
        fields = paper_fields(paper)
        for topic_id, matcher in matchers:
            hits = matcher.match(paper, fields)
            if hits is not None:
                yield topic_id, paper.paper_id, hits
