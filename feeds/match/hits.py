"""How a match is said to a person: "matched: 推测解码 in title, summary", or "similar to
MineDraft (0.41)" for a topic by example. Pure."""

from __future__ import annotations

import re
from functools import lru_cache

from feeds.model import Hit

# The field of a topic by example's hit: its term is the example and the score,
# "MineDraft (0.41)", said "similar to MineDraft (0.41)" (see feeds.match.likes).
SIMILAR = "similar"


def matched_text(hits: tuple[Hit, ...]) -> str:
    """Return hits as `term in field, field; term in field`, terms in their first order.

    A term is left out when each of its hits is within a longer term's hit in the same
    field (`speculative` beside `speculative decoding`, `推测` beside `推测解码`): the line
    says why a paper matched, the longest terms first found. (The JSON Feed's `matched` keeps
    every hit: it is data.)"""
    fields: dict[str, list[str]] = {}
    for hit in hits:
        fields.setdefault(hit.term, []).append(hit.field)
    # A topic's papers mostly match alike: a line is made once per set of hits (a tuple of
    # strings hashes in C, a tuple of Hits in Python).
    return _matched_line(tuple((term, tuple(names)) for term, names in fields.items()))


@lru_cache(maxsize=4096)
def _matched_line(fields: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    if len(fields) > 1:
        fields = tuple(
            (term, names)
            for term, names in fields
            if not all(
                any(f in others and _within(term, longer) for longer, others in fields)
                for f in names
            )
        )
    return "; ".join(
        f"similar to {term}" if names == (SIMILAR,) else f"{term} in {', '.join(names)}"
        for term, names in fields
    )


@lru_cache(maxsize=4096)
def _within(term: str, longer: str) -> bool:
    """Return True when a term's every match is inside `longer`: the matcher finds `term`
    in the text `longer` stands for (a /regex/ stands for no text), which is longer."""
    if term == longer:
        return False
    from feeds.match.terms import compile_term  # only for lines of several terms

    try:
        outer, inner = compile_term(longer), compile_term(term)
    except re.error:  # not a term (a venue or an author that matched): nothing is within
        return False
    key = outer.key
    return key is not None and key != inner.key and inner.search(key)
