"""Similarity of papers to examples, for topics by example (`like:`, `unlike:`): tf-idf over
a paper's titles, summary and abstract, English words and Chinese character bigrams, and
the cosine over the languages both texts have (an English description is compared with a
paper's English, not diluted by its Chinese summary). Pure: no I/O, no clock. The slow,
obvious implementation it must agree with is feeds.match.similar_reference; benchmarks/like.md
says why this method and threshold.

Incremental by construction: terms are hashed into N_FEATURES columns (as scikit-learn's
HashingVectorizer hashes: no vocabulary to fit), and the document frequencies are a vector of
counts (`DocFreq`) that new papers are added to. Scoring a new digest costs its own papers
plus a constant (one pass over the count vector), however long the history.

Stable over time: idf moves as papers arrive, so a paper's score is only meaningful with
the counts it was scored with. The caller decides a paper's membership once, when it enters
(with `add(df, batch)` as the counts), stores the decision, and re-scores stored papers
only when the topic's `topic_key` changes (its examples or threshold): then with the
current counts. Given the same counts and inputs, every function here returns the same.
"""

from __future__ import annotations

import hashlib
import re
import struct
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from feeds.model import Paper

N_FEATURES = 1 << 22  # hashed columns (2**21 a language): collisions stay rare
_HALF = N_FEATURES // 2  # words in the first half, Chinese bigrams in the second
# Chosen from benchmarks/like.md: the precision/recall of the labelled seed topics.
DEFAULT_MIN_SIMILARITY = 0.10
Method = Literal["max", "centroid"]
DEFAULT_METHOD: Method = "max"
_CHUNK = 4096  # papers scored at a time: bounds the dense (papers x examples) block ...
_CELLS = 1 << 22  # ... to this many cells (32 MB), however many examples (a library)

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(f"([{_HAN}]+)|([^\\W_{_HAN}]+)")
# Function words of titles and descriptions. Chinese bigrams need no list: idf weighs the
# summaries' boilerplate (提出, 通过) down, and a list of them measured no better (like.md).
_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from",
    "how", "in", "into", "is", "it", "its", "not", "of", "on", "or", "our", "the", "their",
    "this", "to", "towards", "via", "we", "what", "when", "which", "with", "without",
))  # fmt: skip


def tokens(text: str) -> list[str]:
    """Return the terms of a text: English (Latin) words, case-folded after NFKC, function
    words and bare numbers dropped, a plural `s` stripped; and every two adjacent Chinese
    characters (a run of one character is itself a term)."""
    out: list[str] = []
    for han, latin in _TOKEN.findall(unicodedata.normalize("NFKC", text)):
        if han:
            if len(han) == 1:
                out.append(han)
            else:
                out.extend([han[i : i + 2] for i in range(len(han) - 1)])
            continue
        word = latin.casefold()
        if word in _STOPWORDS or word.isdigit() or (len(word) == 1 and word.isascii()):
            continue  # a lone letter is no word (the `t` of "don't", an initial)
        if word.endswith("sses"):
            word = word[:-2]  # losses -> loss
        elif len(word) > 3 and word[-1] == "s" and word[-2] not in "su":
            word = word[:-1]  # models -> model, LLMs -> llm; loss, focus stay
        out.append(word)
    return out


def paper_text(paper: Paper) -> str:
    """Return what a paper is compared by: its English and Chinese titles, its (Chinese)
    summary and its English abstract."""
    parts = (paper.title, paper.title_zh, paper.summary, paper.abstract)
    return "\n".join(p for p in parts if p)


def paper_label(paper: Paper) -> str:
    """Return a paper's short name for explanations (see title_label)."""
    return title_label(paper.title)


def title_label(title: str) -> str:
    """Return a title's short name: `MineDraft` for "MineDraft: A ...", the whole title
    when it has no short name before a colon."""
    head, colon, _rest = title.partition(":")
    return head.strip() if colon and 0 < len(head.split()) <= 3 else title


@dataclass(frozen=True)
class Example:
    """One example of a topic: `label` is what an item names ("similar to MineDraft"),
    `text` what is compared (`paper_text` of a paper, or a description as written)."""

    label: str
    text: str

    @classmethod
    def of_paper(cls, paper: Paper) -> Example:
        return cls(paper_label(paper), paper_text(paper))

    @classmethod
    def description(cls, text: str) -> Example:
        from feeds.words import shorten

        return cls(shorten(" ".join(text.split()), 80), text)  # quoted briefly in every item


@dataclass(frozen=True)
class LikeTopic:
    """What a topic by example compares with: papers must be at least `min_similarity`
    similar to one `like` example and more similar to it than to any `unlike` example."""

    like: tuple[Example, ...]
    unlike: tuple[Example, ...] = ()
    min_similarity: float = DEFAULT_MIN_SIMILARITY
    # The papers not to take, already in the topic's library: `id:<paper id>`,
    # `arxiv:<id>`, `doi:<doi>` (see feeds.config.library.LibraryItem.names, owned_keys).
    exclude: frozenset[str] = frozenset()

    def excludes(self, paper: Paper) -> bool:
        """Return True for a paper that is already in the topic's library."""
        return bool(self.exclude) and not self.exclude.isdisjoint(owned_keys(paper))


def owned_keys(paper: Paper) -> list[str]:
    """Return what names a paper in a library (see LikeTopic.exclude): its title's id, its
    arXiv id and a DOI its journal ref or comments give."""
    from feeds.text import doi_in

    keys = [f"id:{paper.paper_id}"]
    if paper.arxiv_id:
        keys.append(f"arxiv:{paper.arxiv_id}")
    doi = doi_in(paper.journal_ref) or doi_in(paper.comments)
    if doi:
        keys.append(f"doi:{doi}")
    return keys


@dataclass(frozen=True)
class Similar:
    """How similar paper `index` of a batch is to a topic's examples.

    `score` is the cosine similarity the decision uses, `label` the like example it is most
    similar to; `unlike_label`/`unlike_score` the same for the unlike examples (None and 0.0
    without any). `passes`: score >= min_similarity and score > unlike_score.
    """

    index: int
    label: str
    score: float
    unlike_label: str | None
    unlike_score: float
    passes: bool
    example: int = 0  # which like example of the topic is the most similar (`label`'s)

    def explain(self) -> str:
        """Return the reason an item gives: "similar to MineDraft (0.41)"."""
        return f"similar to {self.label} ({self.score:.2f})"


@dataclass(frozen=True, eq=False)
class DocFreq:
    """Document frequencies: in how many of `n_docs` papers each hashed term occurs.
    `counts` is read-only; `add` returns a new DocFreq."""

    n_docs: int
    counts: npt.NDArray[np.int64]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DocFreq)
            and self.n_docs == other.n_docs
            and bool(np.array_equal(self.counts, other.counts))
        )

    __hash__ = None  # type: ignore[assignment]  # equal by value, but holds an array


def _frozen(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    counts.flags.writeable = False
    return counts


def empty() -> DocFreq:
    """Return the document frequencies of no papers."""
    return DocFreq(0, _frozen(np.zeros(N_FEATURES, dtype=np.int64)))


def is_han(term: str) -> bool:
    """Return True for a Chinese term (a character bigram), False for a word."""
    return "\u3400" <= term[0] <= "\u9fff" or "\uf900" <= term[0] <= "\ufaff"


@lru_cache(maxsize=1 << 18)
def column(term: str) -> int:
    """Return a term's hashed column: scikit-learn's HashingVectorizer's (MurmurHash3 of
    its UTF-8, signed, its absolute value modulo the columns of a half), words in the first
    half, Chinese bigrams in the second (so that languages can be told apart after hashing).

    mmh3 rather than scikit-learn itself, whose import took ~0.6 s of every run that had a
    topic by example to match; tests/test_similar.py holds the two to the same columns."""
    import mmh3

    h = mmh3.hash(term, 0, signed=True)
    at = (2147483647 - (_HALF - 1)) % _HALF if h == -2147483648 else abs(h) % _HALF
    return at + _HALF if is_han(term) else at


def _term_counts(texts: Sequence[str]) -> Any:
    """Return a CSR matrix: per text, the count of each hashed term (see column)."""
    from collections import Counter

    from scipy import sparse

    indptr, indices, counts = [0], list[int](), list[int]()
    for text in texts:
        found = Counter(column(t) for t in tokens(text))
        indices += found.keys()
        counts += found.values()
        indptr.append(len(indices))
    matrix = sparse.csr_matrix(
        (np.array(counts, dtype=np.float64), np.array(indices, dtype=np.int32), indptr),
        shape=(len(texts), N_FEATURES),
    )
    matrix.sort_indices()
    return matrix


def add(df: DocFreq, texts: Sequence[str]) -> DocFreq:
    """Return the document frequencies once `texts` (`paper_text` of new papers) are
    counted too. Additive: adding A then B equals adding B then A equals adding A + B."""
    columns, present = np.unique(_term_counts(texts).indices, return_counts=True)
    counts = df.counts.copy()  # a memory copy: the one cost that is not the new papers'
    counts[columns] += present
    return DocFreq(df.n_docs + len(texts), _frozen(counts))


def combine(a: DocFreq, b: DocFreq) -> DocFreq:
    """Return the document frequencies of two disjoint sets of papers together."""
    return DocFreq(a.n_docs + b.n_docs, _frozen(a.counts + b.counts))


_MAGIC = b"paperfeeds-df\x01"
_HEAD = struct.Struct("<QQQ")  # features, documents, non-zero entries


def to_bytes(df: DocFreq) -> bytes:
    """Return the document frequencies as bytes to store (the non-zero counts, deflated)."""
    nonzero = np.flatnonzero(df.counts).astype("<u4")
    values = df.counts[nonzero].astype("<u8")
    body = _HEAD.pack(N_FEATURES, df.n_docs, len(nonzero)) + nonzero.tobytes() + values.tobytes()
    return _MAGIC + zlib.compress(body, 1)


def from_bytes(data: bytes) -> DocFreq:
    """Return the document frequencies that `to_bytes` gave; ValueError if they are not."""
    if not data.startswith(_MAGIC):
        raise ValueError("not paperfeeds document frequencies")
    try:
        body = zlib.decompress(data[len(_MAGIC) :])
        features, n_docs, nnz = _HEAD.unpack_from(body)
    except (zlib.error, struct.error) as e:
        raise ValueError(f"damaged document frequencies: {e}") from e
    if features != N_FEATURES or len(body) != _HEAD.size + 12 * nnz:
        raise ValueError("document frequencies of another size or damaged")
    at = _HEAD.size
    where = np.frombuffer(body, dtype="<u4", count=nnz, offset=at)
    values = np.frombuffer(body, dtype="<u8", count=nnz, offset=at + 4 * nnz)
    counts = np.zeros(N_FEATURES, dtype=np.int64)
    counts[where] = values
    return DocFreq(int(n_docs), _frozen(counts))


def idf(df: DocFreq, columns: npt.NDArray[np.int32]) -> npt.NDArray[np.float64]:
    """Return the inverse document frequency of hashed terms: ln((1+n)/(1+df)) + 1,
    scikit-learn's smooth idf (finite for terms no counted paper has)."""
    result: npt.NDArray[np.float64] = np.log((1.0 + df.n_docs) / (1.0 + df.counts[columns])) + 1
    return result


def vectors(df: DocFreq, texts: Sequence[str]) -> Any:
    """Return the tf-idf vectors of texts (CSR, one row each): (1 + ln tf) x idf, not
    normalized (`_languages` gives what the cosine needs). Costs the texts' own terms."""
    matrix = _term_counts(texts).astype(np.float64)
    np.log(matrix.data, out=matrix.data)
    matrix.data += 1.0
    matrix.data *= idf(df, matrix.indices)
    return matrix


def _languages(rows: Any) -> npt.NDArray[np.float64]:
    """Return per row the squared norm of its words and of its Chinese terms (rows x 2)."""
    n = rows.shape[0]
    squares = rows.data**2
    row_of = np.repeat(np.arange(n), np.diff(rows.indptr))
    han = rows.indices >= _HALF
    return np.column_stack(
        [np.bincount(row_of[~han], squares[~han], minlength=n),
         np.bincount(row_of[han], squares[han], minlength=n)]
    )  # fmt: skip


def _cosines(
    dots: npt.NDArray[np.float64], a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Return the cosine of every pair of rows over the languages both rows have: a
    description in English is compared with a paper's English, a paper with only an
    English abstract with the English of another. (`dots`: the dot products, rows of a x
    rows of b; a, b: their `_languages`.)"""
    both_words = (a[:, :1] > 0) & (b[:, 0] > 0)
    both_han = (a[:, 1:] > 0) & (b[:, 1] > 0)
    norm_a = np.sqrt(both_words * a[:, :1] + both_han * a[:, 1:])
    norm_b = np.sqrt(both_words * b[:, 0] + both_han * b[:, 1])
    den = norm_a * norm_b
    result: npt.NDArray[np.float64] = np.divide(dots, den, out=np.zeros_like(dots), where=den > 0)
    return np.minimum(result, 1.0)  # rounding; a paper is at most identical to itself


def _centroids(rows: Any, sizes: Sequence[int]) -> Any:
    """Return per group of rows the mean of their unit vectors (CSR, one row per group)."""
    from scipy import sparse

    group = np.repeat(np.arange(len(sizes)), sizes)
    weight = 1.0 / np.repeat(np.maximum(sizes, 1), sizes)
    norms = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1)).ravel())
    weight = weight / np.where(norms > 0, norms, 1.0)  # each row a unit vector
    member = sparse.csr_matrix(
        (weight, (group, np.arange(len(group)))), shape=(len(sizes), len(group))
    )
    return (member @ rows).tocsr()


def _columns(df: DocFreq, topics: Sequence[LikeTopic], method: Method) -> Columns:
    """Return the topics' examples as columns (see Columns)."""
    from scipy import sparse

    sizes = [len(t.like) for t in topics]
    likes = vectors(df, [e.text for t in topics for e in t.like])
    unlikes = vectors(df, [e.text for t in topics for e in t.unlike])
    # Columns: every like example, then (centroid method) each topic's centroid, then
    # every unlike example.
    centres = _centroids(likes, sizes) if method == "centroid" else likes[:0]
    columns = sparse.vstack([likes, centres, unlikes], format="csr")
    like_at = np.cumsum([0, *sizes])
    unlike_at = like_at[-1] + centres.shape[0] + np.cumsum([0, *(len(t.unlike) for t in topics)])
    return Columns(columns.T.tocsr(), _languages(columns), like_at, unlike_at)


def similar(
    df: DocFreq,
    topics: Sequence[LikeTopic],
    papers: Sequence[Paper] | Sequence[str],
    *,
    floor: float | None = None,
    method: Method = DEFAULT_METHOD,
) -> tuple[tuple[Similar, ...], ...]:
    """Return per topic the papers (or `paper_text`s) whose score is at least `floor`
    (default: the topic's min_similarity, so the matches alone), by index, with scores.

    `floor` below min_similarity adds the near misses (passes False), for `feeds check`.
    A paper a topic excludes (in its library already) is never returned for it.
    `method`: "max" scores a paper by its most similar like example, "centroid" by the mean
    of the like examples; unlike examples count by the most similar, with both.
    """
    return Scorer(df, topics, method).score(papers, floor=floor)


@dataclass(frozen=True, eq=False)
class Columns:
    """Topics' examples as the columns papers are multiplied with (see Scorer): what a
    caller may keep between runs while the document frequencies stay the same."""

    columns_t: Any  # CSR, features x columns: every like example, the centroids, unlikes
    langs: npt.NDArray[np.float64]  # per column, the squared norm of each language
    like_at: npt.NDArray[np.int64]  # where each topic's like examples start
    unlike_at: npt.NDArray[np.int64]  # where each topic's unlike examples start


class Scorer:
    """Topics by example with their examples made into vectors once, to score any number of
    papers against all of them in one sparse product a block: a new digest under thousands
    of topics costs its papers and one pass over the examples, not a pass per topic.
    `columns`: the examples' vectors made before (see Columns), with the same frequencies."""

    def __init__(
        self,
        df: DocFreq,
        topics: Sequence[LikeTopic],
        method: Method = DEFAULT_METHOD,
        columns: Columns | None = None,
    ) -> None:
        self.df, self.topics, self.method = df, tuple(topics), method
        self.columns = columns or _columns(df, self.topics, method)
        self.columns_t, self.langs = self.columns.columns_t, self.columns.langs
        self.like_at, self.unlike_at = self.columns.like_at, self.columns.unlike_at
        self.centre_at = int(self.like_at[-1])
        self.rows_at_once = max(1, min(_CHUNK, _CELLS // max(1, self.columns_t.shape[1])))
        self.limits = np.array([t.min_similarity for t in topics], dtype=np.float64)
        self.scored = np.flatnonzero(np.diff(self.like_at) > 0)  # none without a like example

    def score(
        self,
        papers: Sequence[Paper] | Sequence[str],
        *,
        floor: float | None = None,
        near: float | None = None,
    ) -> tuple[tuple[Similar, ...], ...]:
        """Return what `similar` returns for these papers; `near` (a fraction) lowers each
        topic's floor to that fraction of its own threshold, as `floor` lowers all."""
        texts = [p if isinstance(p, str) else paper_text(p) for p in papers]
        out: list[list[Similar]] = [[] for _ in self.topics]
        if not texts or not len(self.scored):
            return tuple(tuple(r) for r in out)
        limits = self.limits if floor is None else np.minimum(floor, self.limits)
        if near is not None:
            limits = np.minimum(limits, self.limits * near)
        scored, like_at = self.scored, self.like_at
        for start in range(0, len(texts), self.rows_at_once):
            block = vectors(self.df, texts[start : start + self.rows_at_once])
            sims = _cosines((block @ self.columns_t).toarray(), _languages(block), self.langs)
            if self.method == "max":  # each topic's best like example, all topics at once
                best = np.maximum.reduceat(sims[:, : self.centre_at], like_at[scored], axis=1)
            else:
                best = sims[:, self.centre_at + scored]
            rows, cols = np.nonzero(best >= limits[scored])
            for i, c in zip(rows.tolist(), cols.tolist(), strict=True):
                k = int(scored[c])
                self._add(out[k], k, papers[start + i], start + i, sims[i], float(best[i, c]))
        return tuple(tuple(r) for r in out)

    def _add(
        self, out: list[Similar], k: int, paper: Paper | str, index: int, sims: Any, score: float
    ) -> None:
        topic = self.topics[k]
        if topic.exclude and isinstance(paper, Paper) and topic.excludes(paper):
            return  # in the topic's library already
        first, end = int(self.like_at[k]), int(self.like_at[k + 1])
        best = first + int(sims[first:end].argmax())
        u_first, u_end = int(self.unlike_at[k]), int(self.unlike_at[k + 1])
        u_best = u_first + int(sims[u_first:u_end].argmax()) if u_end > u_first else None
        u_score = 0.0 if u_best is None else float(sims[u_best])
        out.append(
            Similar(
                index=index,
                label=topic.like[best - first].label,
                score=score,
                unlike_label=None if u_best is None else topic.unlike[u_best - u_first].label,
                unlike_score=u_score,
                passes=score >= topic.min_similarity and score > u_score,
                example=best - first,
            )
        )


def topic_key(topic: LikeTopic) -> str:
    """Return a fingerprint of what a topic's decisions depend on (its examples' texts and
    threshold): when it changes, the caller re-matches the topic's stored papers."""
    h = hashlib.sha256()
    for kind, examples in (("like", topic.like), ("unlike", topic.unlike)):
        for e in examples:
            h.update(f"{kind}\x00{e.text}\x00".encode())
    h.update(repr(float(topic.min_similarity)).encode())
    for key in sorted(topic.exclude):
        h.update(f"exclude\x00{key}\x00".encode())
    return h.hexdigest()[:16]
