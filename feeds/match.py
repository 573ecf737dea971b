"""Decide which papers belong to which topics, and say why. Pure: no I/O, no clock.

Term rules (SPEC "Subscriptions"): case-insensitive after NFKC; Latin terms match whole
words with space, hyphen and underscore alike; a CJK character next to a Latin term is a
word boundary; a trailing `*` makes a prefix; terms with CJK characters match as
substrings; `/.../` is a regular expression.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from feeds.model import Hit, Paper
from feeds.text import fold, has_cjk, strip_accents

# Letters and digits of alphabetic scripts. CJK is deliberately absent: `扩散LLM推理`
# contains the word `LLM`, which Python's \b (CJK counts as \w) would not find.
_WORD = r"[0-9a-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff\u1e00-\u1eff]"
_SEP = r"[\s\-_\u2010-\u2015]+"
_SPLIT = re.compile(_SEP)
_SEP_RUN = re.compile(_SEP)
_WORD_CHAR = re.compile(_WORD)

FIELDS = ("title", "summary", "authors", "institutions", "comments", "venue")
DEFAULT_FIELDS = ("title", "summary")


@dataclass(frozen=True)
class Term:
    """A compiled term: what the user wrote, and how to find it in normalized text.

    `key` is the literal the term stands for in normalized text (None for a regular
    expression); `left`/`right` say whether a word boundary is needed at that edge. The
    regex `pattern` says the same for the straightforward matcher.
    """

    text: str
    source: str  # the regular expression that finds the term in normalized text
    key: str | None = None
    left: bool = False
    right: bool = False
    # What the fast matcher records a find under: the same literal with the same edges.
    variant: tuple[str, bool, bool] | None = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        variant = None if self.key is None else (self.key, self.left, self.right)
        object.__setattr__(self, "variant", variant)

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        # Compiled on first use: the fast matcher needs it only for /regex/ terms, and
        # compiling ten thousand patterns would dominate building it.
        return re.compile(self.source, 0 if self.key is not None else re.IGNORECASE)

    def search(self, normalized: str) -> bool:
        return self.pattern.search(normalized) is not None


def normalize(text: str) -> str:
    """Return text as terms are matched against it: folded, separators one space.

    LaTeX dollars are dropped ("$k$-Means" holds the word "k-means").
    """
    return _SEP_RUN.sub(" ", fold(text.replace("$", "")))


def check_term(text: str) -> None:
    """Raise re.error when a term cannot be used (a bad /regex/, nothing to match)."""
    raw = text.strip()
    if len(raw) >= 2 and raw.startswith("/") and raw.endswith("/"):
        re.compile(raw[1:-1], re.IGNORECASE)
    elif not any(_SPLIT.split(fold(raw).rstrip("*"))):
        raise re.error(f"empty term {text!r}")


def compile_term(text: str) -> Term:
    """Return the compiled form of one subscription term; raise re.error for a bad regex."""
    raw = text.strip()
    if len(raw) >= 2 and raw.startswith("/") and raw.endswith("/"):
        regex = Term(text, raw[1:-1])
        regex.pattern  # noqa: B018 -- compiled now, so that a bad expression fails at load time
        return regex
    term = fold(raw)
    prefix = term.endswith("*") and not has_cjk(term)
    tokens = [t for t in _SPLIT.split(term.rstrip("*") if prefix else term) if t]
    if not tokens:
        raise re.error(f"empty term {text!r}")
    key = " ".join(tokens)
    if has_cjk(term):  # a substring anywhere: CJK has no spaces between words
        return Term(text, re.escape(key), key)
    left = re.match(_WORD, tokens[0]) is not None
    right = not prefix and re.search(_WORD + "$", tokens[-1]) is not None
    pattern = (f"(?<!{_WORD})" if left else "") + re.escape(key) + (f"(?!{_WORD})" if right else "")
    return Term(text, pattern, key, left, right)


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


def paper_fields(paper: Paper) -> dict[str, str]:
    """Return each matchable field of a paper as one normalized string."""
    institutions = " ; ".join(
        i.name + (f" ; {i.name_zh}" if i.name_zh else "") for i in paper.institutions
    )
    comments = " ; ".join(x for x in (paper.comments, paper.journal_ref) if x)
    return {
        "title": normalize(paper.title + " ; " + (paper.title_zh or "")),
        "summary": normalize(paper.summary or ""),
        "authors": normalize(" ; ".join(paper.authors)),
        "institutions": normalize(institutions),
        "comments": normalize(comments),
        "venue": normalize(paper.venue or ""),
    }


# What the fast matcher found in a paper: (term variant, field) pairs. Institution terms
# are looked for in the accent-stripped institutions, under the pseudo-field INSTITUTIONS.
Found = dict[tuple[str, bool, bool], set[str]]  # term variant -> fields it was found in
INSTITUTIONS = "institutions/plain"


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

    @property
    def terms(self) -> tuple[Term, ...]:
        return (*self.any, *(t for g in self.all for t in g), *self.none)

    def _hits(
        self, terms: Iterable[Term], fields: dict[str, str], found: Found | None
    ) -> list[Hit]:
        names = self.criteria.fields
        out: list[Hit] = []
        for term in terms:
            variant = term.variant
            if found is None or variant is None:
                out.extend(Hit(term.text, n) for n in names if term.pattern.search(fields[n]))
            elif (where := found.get(variant)) is not None:
                out.extend(Hit(term.text, n) for n in names if n in where)
        return out

    def match(
        self, paper: Paper, fields: dict[str, str] | None = None, found: Found | None = None
    ) -> tuple[Hit, ...] | None:
        """Return the hits that make the paper match, or None when it does not match.

        Without `found`, every term is searched for with its regular expression (the
        straightforward way); with it, literal terms are looked up in what the fast matcher
        found, so that both share every rule after "where does this term occur".
        """
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
            text = fields.get(INSTITUTIONS) or strip_accents(fields["institutions"])
            found_i = [
                t.text
                for t in self.institutions
                if (t.search(text) if found is None or t.variant is None
                    else INSTITUTIONS in found.get(t.variant, ()))
            ]  # fmt: skip
            if not found_i:
                return None
            hits.extend(Hit(t, "institutions") for t in found_i)
        if c.any:
            any_hits = self._hits(self.any, fields, found)
            if not any_hits:
                return None
            hits.extend(any_hits)
        for group in self.all:
            group_hits = self._hits(group, fields, found)
            if not group_hits:
                return None
            hits.extend(group_hits)
        if self.none and self._hits(self.none, fields, found):
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


class Matcher:
    """All topics at once: one Aho-Corasick automaton over every literal term.

    A paper is scanned once per field; word boundaries are checked only at the edges of
    what the automaton found; hits lead to candidate topics through a table, and only
    those (plus topics with no literal positive term) are evaluated. Built once, reused
    while the subscriptions do not change.
    """

    def __init__(self, topics: Sequence[tuple[str, Criteria]]) -> None:
        import ahocorasick  # C extension; imported only when matching

        self.topics = [(tid, TopicMatcher(c)) for tid, c in topics]
        self.terms = ahocorasick.Automaton()
        self.institutions = ahocorasick.Automaton()
        self.always: list[int] = []  # topics that may match without any literal hit
        self.by_venue: dict[str, list[int]] = {}  # topics that are "every paper of venue V"
        by_variant: dict[tuple[str, bool, bool], set[int]] = {}
        by_inst_variant: dict[tuple[str, bool, bool], set[int]] = {}
        self.fields: set[str] = set()
        for index, (_tid, m) in enumerate(self.topics):
            positive = [*m.any, *(t for g in m.all for t in g)]
            for term in m.terms:
                if term.variant is not None:
                    by_variant.setdefault(term.variant, set())
            for term in positive:
                if term.variant is not None:
                    by_variant[term.variant].add(index)
            for term in m.institutions:
                if term.variant is not None:
                    by_inst_variant.setdefault(term.variant, set()).add(index)
            literal_positive = any(t.variant is not None for t in positive) or any(
                t.variant is not None for t in m.institutions
            )
            c = m.criteria
            if c.venues and not (c.any or c.all or c.none or c.authors or c.institutions):
                for venue in m.venues:  # "every ICML paper": a table lookup, no evaluation
                    self.by_venue.setdefault(venue, []).append(index)
            elif not literal_positive or any(
                t.variant is None for t in (*positive, *m.institutions)
            ):
                self.always.append(index)
            if m.terms:
                self.fields.update(m.criteria.fields)
        for automaton, table in ((self.terms, by_variant), (self.institutions, by_inst_variant)):
            keys: dict[str, list[tuple[tuple[str, bool, bool], frozenset[int]]]] = {}
            for variant, topic_set in table.items():
                keys.setdefault(variant[0], []).append((variant, frozenset(topic_set)))
            for key, variants in keys.items():
                automaton.add_word(key, (len(key), tuple(variants)))
            if keys:
                automaton.make_automaton()
        self._has_terms = bool(by_variant)
        self._has_inst = bool(by_inst_variant)

    @staticmethod
    def _scan(automaton: object, text: str, name: str, found: Found, candidates: set[int]) -> None:
        n = len(text)
        word = _WORD_CHAR.match
        for end, (length, variants) in automaton.iter(text):  # type: ignore[attr-defined]
            start = end - length + 1
            for variant, topic_set in variants:
                _key, left, right = variant
                if left and start > 0 and word(text, start - 1):
                    continue
                if right and end + 1 < n and word(text, end + 1):
                    continue
                found.setdefault(variant, set()).add(name)
                candidates.update(topic_set)

    def match(self, paper: Paper) -> list[tuple[str, tuple[Hit, ...]]]:
        """Return (topic id, hits) for every topic the paper matches, in topic order."""
        fields = paper_fields(paper)
        found: Found = {}
        candidates: set[int] = set(self.always)
        if self._has_terms:
            for name in self.fields:
                if fields[name]:
                    self._scan(self.terms, fields[name], name, found, candidates)
        if self._has_inst and fields["institutions"]:
            text = fields[INSTITUTIONS] = strip_accents(fields["institutions"])  # once a paper
            self._scan(self.institutions, text, INSTITUTIONS, found, candidates)
        venue_topics = self.by_venue.get(fold(paper.venue or "").strip(), ())
        out: list[tuple[str, tuple[Hit, ...]]] = []
        for index in sorted(candidates.union(venue_topics)):
            topic_id, m = self.topics[index]
            if index in venue_topics:
                out.append((topic_id, (Hit(paper.venue or "", "venue"),)))
                continue
            hits = m.match(paper, fields, found)
            if hits is not None:
                out.append((topic_id, hits))
        return out
