"""Decide which papers belong to which topics, and say why: all topics at once, with one
Aho-Corasick automaton over every literal term. Pure: no I/O, no clock. The reference
matcher it must agree with is feeds.match.reference; terms are compiled by feeds.match.terms.
"""

from __future__ import annotations

import gc
from bisect import bisect_right
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, NamedTuple

from feeds.match.fields import RAW_FIELDS
from feeds.match.reference import TopicMatcher
from feeds.match.terms import TWINS, WORD_CHARS, Searcher, Term, normalize, required_literal
from feeds.model import Hit, Paper
from feeds.text import fold, person_key, strip_accents
from feeds.topics import FIELDS, Criteria

_BITS = tuple((i, 1 << i) for i in range(len(FIELDS)))
_FIELD_BIT = {name: 1 << i for i, name in enumerate(FIELDS)}
_PLAIN_INSTITUTIONS = 1 << len(FIELDS)  # "found in the accent-stripped institutions"
# Between a paper's fields when they are normalized together: NFKC, case folding and
# separator runs leave it alone and nothing around it changes because of it.
_FIELD_SEP = "\x00"

# A term of a topic as the fast matcher evaluates it: what it is found as (a literal's variant
# number, or -1 - the number of a regular expression), its place in its clause, its text, the
# topic's fields in order (bit, name), and its hits by the fields it is found in (made as
# met, see _hits: a cached matcher loads faster without them).
_Ref = tuple[int, int, str, tuple[tuple[int, str], ...], dict[int, tuple[Hit, ...]]]

# A topic to evaluate when a variant is found in certain fields; for a topic that is a clause
# of literals alone, with the terms of the clause that are that variant.
_Trigger = tuple[int, int, tuple[_Ref, ...] | None]


# Plain named tuples: a cached matcher holds a thousand topics of them, and a tuple loads
# from a pickle far faster than a dataclass with slots (a Python call per object).
class _Clause(NamedTuple):
    """Terms of which at least one must be found: a topic's `any`, or one `all` group."""

    refs: tuple[_Ref, ...]
    literals: dict[int, tuple[int, ...]]  # variant -> its places in refs
    regexes: tuple[int, ...]  # places of regular expressions in refs


class _Regex(NamedTuple):
    pattern: Searcher  # RE2's: pickled as its source, compiled again when loaded
    fields: int  # where any topic looks for it
    literal: int  # variant number of the literal every match contains, or -1


class _Topic(NamedTuple):
    """One topic's rules in the form the fast matcher evaluates them."""

    fields: int
    venues: frozenset[str] | None
    authors: dict[str, Hit] | None  # person key -> hit
    institutions: tuple[tuple[int, Term, Hit], ...]  # (variant number or -1, term, hit)
    clauses: tuple[_Clause, ...]  # `any`, if given, then each `all` group
    none_literals: frozenset[int]
    none_regexes: tuple[int, ...]
    unique: bool  # its hits cannot repeat, so need no de-duplication


class Matcher:
    """All topics at once: one Aho-Corasick automaton over every literal term.

    A paper's fields are normalized together, then scanned one by one; word boundaries are
    checked only at the edges of what the automaton found. A topic is evaluated, with what
    the scan found, only when the one of its criteria chosen as its trigger holds: one of
    its authors, a term of its `any` (or of an `all` group) found in its fields, one of its
    institutions, its venue. A regular expression that starts with a literal is searched for
    only in fields where the scan found that literal. Built once, reused while the
    subscriptions do not change.
    """

    def __init__(self, topics: Sequence[tuple[str, Criteria]]) -> None:
        # Building makes a hundred thousand small objects that live as long as the matcher:
        # the cycle collector, if on, would walk the whole heap several times for nothing.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._build(topics)
        finally:
            if collecting:
                gc.enable()

    def _build(self, topics: Sequence[tuple[str, Criteria]]) -> None:
        import ahocorasick  # C extension; imported only when matching

        # The straightforward matchers are only building material: not kept, so that a
        # built matcher pickles small (see feeds.match.cache.cached_matcher).
        matchers = [TopicMatcher(c) for _tid, c in topics]
        self._ids = [tid for tid, _c in topics]
        self._variants: dict[tuple[str, bool, bool], int] = {}
        regex_numbers: dict[str, int] = {}
        regexes: list[tuple[Term, int]] = []  # (term, fields)
        scanned = 0

        orders: dict[tuple[str, ...], tuple[tuple[int, str], ...]] = {}  # by field names

        def ref(term: Term, place: int, fields: int, names: tuple[str, ...]) -> _Ref:
            order = orders.get(names)
            if order is None:
                order = orders[names] = tuple((_FIELD_BIT[n], n) for n in names)
            if term.variant is not None:
                return self._variant(term.variant), place, term.text, order, {}
            number = regex_numbers.setdefault(term.source, len(regex_numbers))
            if number == len(regexes):
                regexes.append((term, 0))
            regexes[number] = (term, regexes[number][1] | fields)
            return -1 - number, place, term.text, order, {}

        def clause(terms: Sequence[Term], fields: int, names: tuple[str, ...]) -> _Clause:
            refs = tuple(ref(t, place, fields, names) for place, t in enumerate(terms))
            literals: dict[int, tuple[int, ...]] = {}
            for r, place, *_rest in refs:
                if r >= 0:
                    literals[r] = (*literals.get(r, ()), place)
            regexes = tuple(place for r, place, *_rest in refs if r < 0)
            return _Clause(refs, literals, regexes)

        self._plans: list[_Topic] = []
        for m in matchers:
            c = m.criteria
            fields = sum({_FIELD_BIT[n] for n in c.fields})
            if m.terms:
                scanned |= fields
            none = [ref(t, 0, fields, c.fields)[0] for t in m.none]
            self._plans.append(
                _Topic(
                    fields=fields,
                    venues=frozenset(m.venues) if m.venues else None,
                    authors={k: Hit(a, "authors") for k, a in m.authors.items()} or None,
                    institutions=tuple(
                        (
                            -1 if t.variant is None else self._variant(t.variant),
                            t,
                            Hit(t.text, "institutions"),
                        )
                        for t in m.institutions
                    ),
                    clauses=tuple(
                        clause(g, fields, c.fields) for g in ((m.any,) if m.any else ()) + m.all
                    ),
                    none_literals=frozenset(r for r in none if r >= 0),
                    none_regexes=tuple(r for r in none if r < 0),
                    unique=not (c.authors or c.venues)
                    and _distinct(
                        [t.text for t in (*m.institutions, *m.any, *(t for g in m.all for t in g))]
                    ),
                )
            )
        self._regexes = []
        for term, fields in regexes:
            literal = required_literal(term.source)
            variant = -1 if literal is None else self._variant((literal, False, False))
            self._regexes.append(_Regex(term.pattern, fields, variant))

        self._triggers: dict[int, list[_Trigger]] = {}  # by variant
        self._on_twins: list[int] = []  # topics triggered by the literal of a regex
        self._by_person: dict[str, list[int]] = {}
        self._by_venue: dict[str, list[int]] = {}
        self._venue_only: dict[str, list[int]] = {}  # "every paper of venue V": no evaluation
        self._always: list[int] = []
        for index, m in enumerate(matchers):
            self._choose_trigger(index, m.criteria)
        # For topics gathered, not evaluated: the literals that exclude them, and where.
        self._nones = [
            (p.none_literals, p.fields) if p.none_literals else None for p in self._plans
        ]

        # The fields normalized for each paper, in FIELDS order, and those of them scanned.
        institutions = FIELDS.index("institutions")
        stripped = any(p.institutions for p in self._plans)
        needed = [i for i in range(len(FIELDS)) if (scanned | stripped << institutions) >> i & 1]
        self._raw = [RAW_FIELDS[FIELDS[i]] for i in needed]
        self._position = {i: j for j, i in enumerate(needed)}
        self._scan = tuple((j, 1 << i) for j, i in enumerate(needed) if scanned >> i & 1)
        self._institutions = self._position[institutions] if stripped else -1
        self._twins = any(r.literal >= 0 for r in self._regexes)
        self._persons = any(p.authors for p in self._plans)
        self._venue_keys: dict[str, str] = {}
        self._venue_results: dict[str, tuple[list[int], list[tuple[str, tuple[Hit, ...]]]]] = {}
        self._person_keys: dict[str, str] = {}

        term_keys: dict[str, list[tuple[int, bool, bool]]] = {}
        inst_keys: dict[str, list[tuple[int, bool, bool]]] = {}
        for m in matchers:
            for term in m.terms:
                if term.variant is not None:
                    self._add(term_keys, term.variant)
            for term in m.institutions:
                if term.variant is not None:
                    self._add(inst_keys, term.variant)
        for term, _fields in regexes:
            literal = required_literal(term.source)
            if literal is not None:
                self._add(term_keys, (literal, False, False))
        self._terms = ahocorasick.Automaton()
        self._inst = ahocorasick.Automaton()
        for automaton, keys in ((self._terms, term_keys), (self._inst, inst_keys)):
            for key, entries in keys.items():
                if len(entries) == 1:  # the common case, unpacked: (length, left, right, variant)
                    automaton.add_word(key, (len(key), entries[0][1], entries[0][2], entries[0][0]))
                else:  # (length, -, -, variants with their edges)
                    automaton.add_word(key, (len(key), False, False, tuple(entries)))
            if keys:
                automaton.make_automaton()
        self._has_terms = bool(term_keys)
        self._has_inst = bool(inst_keys)

    def _variant(self, variant: tuple[str, bool, bool]) -> int:
        return self._variants.setdefault(variant, len(self._variants))

    def _add(
        self, keys: dict[str, list[tuple[int, bool, bool]]], v: tuple[str, bool, bool]
    ) -> None:
        entry = (self._variant(v), v[1], v[2])
        entries = keys.setdefault(v[0], [])
        if entry not in entries:
            entries.append(entry)

    def _choose_trigger(self, index: int, c: Criteria) -> None:
        """Index a topic under one of its criteria that must hold for it to match."""
        plan = self._plans[index]
        if c.venues and not (c.any or c.all or c.none or c.authors or c.institutions):
            for venue in plan.venues or ():
                self._venue_only.setdefault(venue, []).append(index)
        elif plan.authors:
            for key in plan.authors:
                self._by_person.setdefault(key, []).append(index)
        elif clause := self._findable_clause(plan):
            # A topic that is this clause alone (and literals to exclude) matches when the
            # trigger holds and nothing excludes it, with the hits of the terms found: they
            # are gathered right away, not evaluated.
            alone = (len(plan.clauses) == 1 and not clause.regexes and plan.unique
                     and not (plan.none_regexes or plan.institutions or plan.venues))  # fmt: skip
            for ref, place, *_rest in clause.refs:
                if ref >= 0 and alone:
                    if place == clause.literals[ref][0]:
                        refs = tuple(clause.refs[p] for p in clause.literals[ref])
                        self._triggers.setdefault(ref, []).append((index, plan.fields, refs))
                    continue
                variant = ref if ref >= 0 else self._regexes[-1 - ref].literal
                self._triggers.setdefault(variant, []).append((index, plan.fields, None))
            if clause.regexes:
                self._on_twins.append(index)
        elif plan.institutions and all(v >= 0 for v, _t, _h in plan.institutions):
            for variant, _term, _hit in plan.institutions:
                trigger = (index, _PLAIN_INSTITUTIONS, None)
                self._triggers.setdefault(variant, []).append(trigger)
        elif plan.venues:
            for venue in plan.venues:
                self._by_venue.setdefault(venue, []).append(index)
        else:
            self._always.append(index)

    def _findable_clause(self, plan: _Topic) -> _Clause | None:
        """Return a clause (`any` or an `all` group) of which a hit is always found by the
        scan: one of literals if there is one, else one with regular expressions that start
        with a literal; None if no clause is. Of several, the one with the fewest terms (the
        least likely to hold, so the topic is evaluated least often)."""
        literal = [g for g in plan.clauses if not g.regexes]
        findable = [
            g for g in plan.clauses if all(self._regexes[-1 - g.refs[p][0]].literal >= 0
                                           for p in g.regexes)
        ]  # fmt: skip
        return min(literal or findable, key=lambda g: len(g.refs), default=None)

    def _normalized(self, paper: Paper) -> tuple[str, list[str]]:
        """Return the normalized text of the fields this matcher needs, normalized at once,
        joined by the field separator and apart."""
        raw = [get(paper) for get in self._raw]
        joined = _FIELD_SEP.join(raw)
        if joined.count(_FIELD_SEP) != len(raw) - 1:  # a field holds the separator itself
            parts = [normalize(text) for text in raw]
            return _FIELD_SEP.join(parts), parts
        text = normalize(joined)
        return text, text.split(_FIELD_SEP)

    def match(self, paper: Paper) -> list[tuple[str, tuple[Hit, ...]]]:
        """Return (topic id, hits) for every topic the paper matches, in topic order."""
        text, parts = self._normalized(paper) if self._raw else ("", [])
        found: dict[int, int] = {}  # variant -> fields it was found in (bits)
        if self._has_terms:
            for j, bit in self._scan:
                if parts[j]:
                    _scan(self._terms, parts[j], bit, found)
        institutions = ""
        if self._institutions >= 0:
            institutions = strip_accents(parts[self._institutions])
            if self._has_inst and institutions:
                _scan(self._inst, institutions, _PLAIN_INSTITUTIONS, found)

        candidates = set(self._always)  # topics to evaluate
        gathered: dict[int, list[tuple[tuple[_Ref, ...], int]]] = {}  # matching topics: hits
        triggers = self._triggers
        for variant, where in found.items():
            for index, fields, places in triggers.get(variant, ()):
                if where & fields:
                    if places is None:
                        candidates.add(index)
                    elif index in gathered:
                        gathered[index].append((places, where & fields))
                    else:
                        gathered[index] = [(places, where & fields)]
        twins = self._twins and not text.isascii() and TWINS.search(text) is not None
        if twins:
            candidates.update(self._on_twins)
        venue = paper.venue or ""
        venue_key = self._venue_keys.get(venue)
        if venue_key is None:
            if len(self._venue_keys) > 10_000:
                self._venue_keys.clear()
            venue_key = self._venue_keys[venue] = fold(venue).strip()
        candidates.update(self._by_venue.get(venue_key, ()))
        persons: list[str] = []
        if self._persons:
            persons = [self._person_key(a) for a in paper.authors]
            for key in persons:
                candidates.update(self._by_person.get(key, ()))

        # "Every paper of this venue" topics, then the others inserted in topic order.
        out: list[tuple[str, tuple[Hit, ...]]] = []
        venue_topics: list[int] = []
        if venue_key in self._venue_only:
            venue_topics, results = self._venue_only_results(venue, venue_key)
            out = results.copy()
        inserted = 0
        ids, nones = self._ids, self._nones
        for index in sorted(candidates.union(gathered) if gathered else candidates):
            hit_places = gathered.get(index)
            if hit_places is None:
                hits = self._evaluate(
                    self._plans[index], venue, venue_key, persons, institutions, parts, found, twins
                )
                if hits is None:
                    continue
            else:
                none = nones[index]
                if none is not None and any(found[v] & none[1] for v in found.keys() & none[0]):
                    continue
                if len(hit_places) == 1 and len(hit_places[0][0]) == 1:  # one term hit
                    ((_ref, _place, text, order, by_fields),), where = hit_places[0]
                    hits = by_fields.get(where) or _hits(text, order, by_fields, where)
                else:
                    hits = tuple(
                        h
                        for _ref, _place, text, order, by_fields, where in sorted(
                            [(*ref, where) for refs, where in hit_places for ref in refs],
                            key=itemgetter(1),
                        )
                        for h in (by_fields.get(where) or _hits(text, order, by_fields, where))
                    )
            if venue_topics:
                out.insert(bisect_right(venue_topics, index) + inserted, (ids[index], hits))
                inserted += 1
            else:
                out.append((ids[index], hits))
        return out

    def _venue_only_results(
        self, venue: str, venue_key: str
    ) -> tuple[list[int], list[tuple[str, tuple[Hit, ...]]]]:
        """Return the topics that are "every paper of this venue", and what they give."""
        cached = self._venue_results.get(venue)
        if cached is None:
            if len(self._venue_results) > 10_000:
                self._venue_results.clear()
            hits = (Hit(venue, "venue"),)
            topics = self._venue_only[venue_key]
            cached = self._venue_results[venue] = (topics, [(self._ids[i], hits) for i in topics])
        return cached

    def _person_key(self, name: str) -> str:
        key = self._person_keys.get(name)
        if key is None:
            if len(self._person_keys) > 100_000:
                self._person_keys.clear()
            key = self._person_keys[name] = person_key(name)
        return key

    def _found(self, ref: int, parts: list[str], found: dict[int, int], twins: bool) -> int:
        """Return the fields a regular expression (ref < 0) is found in, and remember them."""
        where = found.get(ref)
        if where is None:
            regex = self._regexes[-1 - ref]
            fields = regex.fields
            if regex.literal >= 0 and not twins:
                fields &= found.get(regex.literal, 0)
            where = 0
            for i, bit in _BITS:
                if fields & bit and regex.pattern.search(parts[self._position[i]]):
                    where |= bit
            found[ref] = where
        return where

    def _evaluate(
        self,
        plan: _Topic,
        venue: str,
        venue_key: str,
        persons: list[str],
        institutions: str,
        parts: list[str],
        found: dict[int, int],
        twins: bool,
    ) -> tuple[Hit, ...] | None:
        """Return what TopicMatcher.match returns for this topic, from what the scan found."""
        fields = plan.fields
        hits: list[Hit] = []
        if plan.venues is not None:
            if venue_key not in plan.venues:
                return None
            hits.append(Hit(venue, "venue"))
        if plan.authors is not None:
            named = [plan.authors[k] for k in persons if k in plan.authors]
            if not named:
                return None
            hits += named
        if plan.institutions:
            got = [
                hit
                for variant, term, hit in plan.institutions
                if (found.get(variant, 0) & _PLAIN_INSTITUTIONS if variant >= 0
                    else term.search(institutions))
            ]  # fmt: skip
            if not got:
                return None
            hits += got
        for clause in plan.clauses:
            common = found.keys() & clause.literals.keys()
            if clause.regexes:
                places = sorted([*(p for v in common for p in clause.literals[v]), *clause.regexes])
            elif not common:
                return None
            elif len(common) == 1:
                places = clause.literals[common.pop()]  # type: ignore[assignment]
            else:
                places = sorted(p for v in common for p in clause.literals[v])
            before = len(hits)
            for place in places:
                ref, _place, text, order, by_fields = clause.refs[place]
                where = fields & (found[ref] if ref >= 0 else self._found(ref, parts, found, twins))
                if where:
                    hits += by_fields.get(where) or _hits(text, order, by_fields, where)
            if len(hits) == before:
                return None
        if plan.none_literals:
            for variant in found.keys() & plan.none_literals:
                if found[variant] & fields:
                    return None
        for ref in plan.none_regexes:
            if self._found(ref, parts, found, twins) & fields:
                return None
        return tuple(hits) if plan.unique else tuple(dict.fromkeys(hits))


def _scan(automaton: Any, text: str, bit: int, found: dict[int, int]) -> None:
    """Record in `found` the variants the automaton finds in text, under the field's bit."""
    word = WORD_CHARS
    last = len(text) - 1
    for end, (length, left, right, variant) in automaton.iter(text):
        if type(variant) is int:
            # A word boundary is needed at the left (right) edge: the character before
            # (after) what was found, if any, must not be a word character.
            if left and end >= length and text[end - length] in word:
                continue
            if right and end < last and text[end + 1] in word:
                continue
            found[variant] = found.get(variant, 0) | bit
            continue
        before = end >= length and text[end - length] in word
        after = end < last and text[end + 1] in word
        for v, left_, right_ in variant:
            if not ((left_ and before) or (right_ and after)):
                found[v] = found.get(v, 0) | bit


def _hits(
    text: str, order: tuple[tuple[int, str], ...], by_fields: dict[int, tuple[Hit, ...]], where: int
) -> tuple[Hit, ...]:
    """Return (and remember) a term's hits in the fields `where` says, in the topic's order."""
    hits = by_fields[where] = tuple(Hit(text, name) for bit, name in order if where & bit)
    return hits


def _distinct(texts: list[str]) -> bool:
    return len(set(texts)) == len(texts)
