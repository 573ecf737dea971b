"""Similarity of papers to examples, for topics by example (`like:`, `unlike:`): tf-idf over
a paper's titles, summary and abstract, English words and Chinese character bigrams, and
the cosine over the languages both texts have (an English description is compared with a
paper's English, not diluted by its Chinese summary). Pure: no I/O, no clock. The slow,
obvious implementation it must agree with is feeds.match.similar_reference; benchmarks/like.md
says why this method and threshold.

Incremental by construction: terms are hashed into N_FEATURES columns (scikit-learn's
HashingVectorizer: no vocabulary to fit), and the document frequencies are a vector of
counts (`DocFreq`) that new papers are added to. Scoring a new digest costs its own papers
plus a constant (one pass over the count vector), however long the history.

Stable over time: idf moves as papers arrive, so a paper's score is only meaningful with
the counts it was scored with. The caller decides a paper's membership once, when it enters
(with `add(df, batch)` as the counts), stores the decision, and re-scores stored papers
only when the topic's `topic_key` changes (its examples or threshold): then with the
current counts. Given the same counts and inputs, every function here returns the same.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import struct
import unicodedata
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
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
        if word in _STOPWORDS or word.isdigit():
            continue
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


def closest(name: str, titles: Iterable[str], n: int = 3) -> tuple[str, ...]:
    """Return the titles nearest to a name that matched none, for a config error."""
    by_fold = {t.casefold(): t for t in titles}
    found = difflib.get_close_matches(name.casefold(), list(by_fold), n=n, cutoff=0.4)
    return tuple(by_fold[f] for f in found)


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
        return cls(text, text)


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


def _as_is(terms: list[str]) -> list[str]:
    return terms


@cache
def _hasher() -> Any:
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(analyzer=_as_is, n_features=_HALF, alternate_sign=False, norm=None)


def _term_counts(texts: Sequence[str]) -> Any:
    """Return a CSR matrix: per text, the count of each hashed term; words in the first
    half of the columns, Chinese bigrams in the second (so that languages can be told
    apart after hashing)."""
    from scipy import sparse

    if not texts:  # the hasher cannot take none
        return sparse.csr_matrix((0, N_FEATURES), dtype=np.float64)
    split = [tokens(t) for t in texts]
    words = _hasher().transform([[w for w in ts if not is_han(w)] for ts in split])
    han = _hasher().transform([[w for w in ts if is_han(w)] for ts in split])
    matrix = sparse.hstack([words, han], format="csr")
    matrix.sum_duplicates()
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
    from sklearn.preprocessing import normalize

    group = np.repeat(np.arange(len(sizes)), sizes)
    weight = 1.0 / np.repeat(np.maximum(sizes, 1), sizes)
    member = sparse.csr_matrix(
        (weight, (group, np.arange(len(group)))), shape=(len(sizes), len(group))
    )
    return (member @ normalize(rows)).tocsr()


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
    texts = [p if isinstance(p, str) else paper_text(p) for p in papers]
    out: list[list[Similar]] = [[] for _ in topics]
    if not texts or not topics:
        return tuple(tuple(r) for r in out)
    from scipy import sparse

    sizes = [len(t.like) for t in topics]
    likes = vectors(df, [e.text for t in topics for e in t.like])
    unlikes = vectors(df, [e.text for t in topics for e in t.unlike])
    # Columns: every like example, then (centroid method) each topic's centroid, then
    # every unlike example.
    centres = _centroids(likes, sizes) if method == "centroid" else likes[:0]
    columns = sparse.vstack([likes, centres, unlikes], format="csr")
    langs = _languages(columns)
    columns_t = columns.T.tocsr()  # once: the product wants CSR
    like_at = np.cumsum([0, *sizes])
    centre_at = like_at[-1]
    unlike_at = like_at[-1] + centres.shape[0] + np.cumsum([0, *(len(t.unlike) for t in topics)])
    rows_at_once = max(1, min(_CHUNK, _CELLS // max(1, columns.shape[0])))
    for start in range(0, len(texts), rows_at_once):
        block = vectors(df, texts[start : start + rows_at_once])
        sims = _cosines((block @ columns_t).toarray(), _languages(block), langs)
        rows = np.arange(block.shape[0])
        for k, topic in enumerate(topics):
            if not sizes[k]:
                continue
            cols = sims[:, like_at[k] : like_at[k + 1]]
            best = cols.argmax(axis=1)
            score = cols[rows, best] if method == "max" else sims[:, centre_at + k]
            limit = topic.min_similarity if floor is None else min(floor, topic.min_similarity)
            chosen = np.flatnonzero(score >= limit)
            if not len(chosen):
                continue
            u_best = u_score = None
            if unlike_at[k + 1] > unlike_at[k]:
                u_cols = sims[:, unlike_at[k] : unlike_at[k + 1]]
                u_best = u_cols.argmax(axis=1)
                u_score = u_cols[rows, u_best]
            for i in chosen.tolist():
                paper = papers[start + i]
                if topic.exclude and isinstance(paper, Paper) and topic.excludes(paper):
                    continue  # in the topic's library already
                s = float(score[i])
                u = 0.0 if u_score is None else float(u_score[i])
                out[k].append(
                    Similar(
                        index=start + i,
                        label=topic.like[int(best[i])].label,
                        score=s,
                        unlike_label=None if u_best is None else topic.unlike[int(u_best[i])].label,
                        unlike_score=u,
                        passes=s >= topic.min_similarity and s > u,
                    )
                )
    return tuple(tuple(r) for r in out)


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
