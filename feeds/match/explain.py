"""Why a topic by example takes a paper, in words a person reads: the terms that weighed
most in its similarity to the example. Pure, like similar.py, whose terms and weights these
are."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import numpy as np

from feeds.match.similar import _HAN, DocFreq, column, idf, is_han, tokens


@lru_cache(maxsize=4096)
def _counted(text: str) -> dict[str, int]:
    """Return a text's terms with their counts: an example is counted once however many
    papers it explains (a description may be a megabyte)."""
    from collections import Counter

    return dict(Counter(tokens(text)))


@lru_cache(maxsize=4096)
def _han_runs(text: str) -> list[str]:
    """Return a text's runs of Chinese characters, as tokens sees them (after NFKC)."""
    return re.findall(f"[{_HAN}]+", unicodedata.normalize("NFKC", text))


def words(df: DocFreq, text: str, example: str, n: int = 3) -> tuple[str, ...]:
    """Return the words that weigh most in the similarity of a text to an example: the
    terms both have, by the product of their tf-idf weights (what the cosine adds up), the
    heaviest first; Chinese bigrams that follow each other in the text are said as the
    word they make (推测, 测解, 解码: `推测解码`)."""
    mine, theirs = _counted(text), _counted(example)
    common = sorted(mine.keys() & theirs.keys())
    if not common:
        return ()
    # Each paper is explained for every topic that takes it: arrays, not a loop a term.
    k = len(common)
    weights = idf(df, np.fromiter(map(column, common), dtype=np.int32, count=k)) ** 2
    weights *= 1 + np.log(np.fromiter(map(mine.__getitem__, common), float, count=k))
    weights *= 1 + np.log(np.fromiter(map(theirs.__getitem__, common), float, count=k))
    weight = dict(zip(common, weights.tolist(), strict=True))
    heavy = sorted(common, key=lambda t: (-weight[t], t))[: 4 * n]
    said: dict[str, float] = {t: weight[t] for t in heavy if not is_han(t)}
    pairs = {t for t in heavy if is_han(t) and len(t) == 2}
    for run in _han_runs(text) if pairs else ():
        i = 0
        while i < len(run) - 1:  # the longest stretch of the run made of heavy bigrams
            j = i
            while j < len(run) - 1 and run[j : j + 2] in pairs:
                j += 1
            if j > i:
                word = run[i : j + 1]
                said[word] = max(
                    said.get(word, 0.0), *(weight[run[k : k + 2]] for k in range(i, j))
                )
            i = j + 1 if j > i else i + 1
    chosen: list[str] = []
    for w in sorted(said, key=lambda w: (-said[w], len(w), w)):
        if not any(w in c or c in w for c in chosen):  # 推测解码 once, not 推测解码的 too
            chosen.append(w)
    return tuple(chosen[:n])
