"""The reference for feeds.match.similar: tf-idf with plain dicts keyed by the terms themselves
(no hashing, no sparse matrices, no scikit-learn), cosine by summing products. Slow and
obvious on purpose; tests hold the fast one to it on random inputs (within float rounding
and, in principle, hash collisions)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from feeds.match.similar import LikeTopic, Method, Similar, is_han, tokens

Vector = dict[str, float]


def doc_freq(corpus: Sequence[str]) -> tuple[int, Counter[str]]:
    """Return the number of texts and in how many of them each term occurs."""
    counts: Counter[str] = Counter()
    for text in corpus:
        counts.update(set(tokens(text)))
    return len(corpus), counts


def vector(text: str, n_docs: int, df: Counter[str]) -> Vector:
    """Return a text's tf-idf vector: (1 + ln tf) x (ln((1+n)/(1+df)) + 1)."""
    return {
        term: (1 + math.log(tf)) * (math.log((1 + n_docs) / (1 + df[term])) + 1)
        for term, tf in Counter(tokens(text)).items()
    }


def _unit(v: Vector) -> Vector:
    norm = math.sqrt(sum(x * x for x in v.values()))
    return {t: x / norm for t, x in v.items()} if norm else {}


def cosine(a: Vector, b: Vector) -> float:
    """Return the cosine of two vectors over the languages (words, Chinese terms) both
    have: the parts of the other language are left out of the norms."""
    languages = {is_han(t) for t in a} & {is_han(t) for t in b}
    norm_a = math.sqrt(sum(x * x for t, x in a.items() if is_han(t) in languages))
    norm_b = math.sqrt(sum(x * x for t, x in b.items() if is_han(t) in languages))
    if not norm_a or not norm_b:
        return 0.0
    return min(1.0, sum(x * b.get(t, 0.0) for t, x in a.items()) / norm_a / norm_b)


def centroid(vs: Sequence[Vector]) -> Vector:
    """Return the mean of the vectors made unit."""
    total: dict[str, float] = {}
    for v in map(_unit, vs):
        for t, x in v.items():
            total[t] = total.get(t, 0.0) + x / len(vs)
    return total


def similar(
    corpus: Sequence[str],
    topics: Sequence[LikeTopic],
    texts: Sequence[str],
    *,
    floor: float | None = None,
    method: Method = "max",
) -> tuple[tuple[Similar, ...], ...]:
    """Return what feeds.match.similar.similar returns, with document frequencies of `corpus`."""
    n, df = doc_freq(corpus)
    result = []
    for topic in topics:
        likes = [vector(e.text, n, df) for e in topic.like]
        unlikes = [vector(e.text, n, df) for e in topic.unlike]
        middle = centroid(likes) if likes else {}
        found = []
        for i, text in enumerate(texts):
            v = vector(text, n, df)
            sims = [cosine(v, e) for e in likes]
            if not sims:
                continue
            best = max(range(len(sims)), key=lambda j: (sims[j], -j))  # the first of equals
            score = sims[best] if method == "max" else cosine(v, middle)
            u_sims = [cosine(v, e) for e in unlikes]
            u_best = max(range(len(u_sims)), key=lambda j: (u_sims[j], -j)) if u_sims else None
            u_score = u_sims[u_best] if u_best is not None else 0.0
            limit = topic.min_similarity if floor is None else min(floor, topic.min_similarity)
            if score >= limit:
                found.append(
                    Similar(
                        index=i,
                        label=topic.like[best].label,
                        score=score,
                        unlike_label=topic.unlike[u_best].label if u_best is not None else None,
                        unlike_score=u_score,
                        passes=score >= topic.min_similarity and score > u_score,
                        example=best,
                    )
                )
        result.append(tuple(found))
    return tuple(result)
