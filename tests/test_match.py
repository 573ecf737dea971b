"""The subscription language, rule by rule, on text and papers from the seeds."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from feeds.config import Criteria
from feeds.match.reference import TopicMatcher
from feeds.match.terms import compile_term, normalize
from feeds.model import Hit, Institution, Paper
from feeds.sources.digest import parse
from feeds.text import paper_id

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


@cache
def seed_papers() -> dict[str, Paper]:
    papers: dict[str, Paper] = {}
    for path in sorted(SEEDS.glob("*.txt")):
        for _line, paper in parse(path.read_bytes(), path.name).papers:
            papers[paper.title.split(":")[0]] = paper
    return papers


def seed(prefix: str) -> Paper:
    return seed_papers()[prefix]


# (term, text, matches?) — the texts are taken from the seeds unless marked.
TERMS = [
    ("rate distortion", "A Rate-Distortion Theorem for Membership Testing", True),
    ("rate-distortion", "rate distortion", True),
    ("rate_distortion", "Rate-Distortion", True),
    ("rate distortion", "ratedistortion", False),
    ("LLM", "Efficient Diffusion LLM Inference", True),
    ("LLM", "Efficient DP-SGD for LLMs with Randomized Clipping", False),
    ("LLM", "DyLLM: Efficient Diffusion LLM Inference", True),
    ("LLM", "DyLLM", False),
    ("LLM*", "Efficient DP-SGD for LLMs with Randomized Clipping", True),
    ("LLM*", "DAPD: 面向扩散LLM的基于注意力的依赖感知并行解码", True),
    ("LLM", "DyLLM: 基于显著性标记选择与部分注意力的高效扩散LLM推理", True),
    ("LLM*", "DenseMLLM", False),
    ("LLM*", "Efficient Distributed MLLM Training", False),
    ("MLLM", "Efficient Distributed MLLM Training with Cornstarch", True),
    (
        "speculative decoding",
        "MineDraft: A Framework for Batch Parallel Speculative Decoding",
        True,
    ),
    ("Speculative", "Action-Aware Self-Speculative Pruning", True),  # hyphen is a boundary
    ("self speculative", "Action-Aware Self-Speculative Pruning", True),
    ("推测解码", "提升推测解码的吞吐量和端到端延迟", True),
    ("推测解码", "推测与解码", False),
    ("扩散", "面向扩散LLM的", True),
    ("k-means", "A $k$-Means Interpretation of Chain-of-Thought", True),  # LaTeX $ dropped
    ("chain of thought", "A $k$-Means Interpretation of Chain-of-Thought Graph Learning", True),
    ("/^position:/", "Position: Stop Preaching and Start Practising Data Frugality", True),
    ("/^position:/", "Adopting a Position: nothing", False),
    ("/gr(a|e)y/", "GREY", True),
    ("ＬＬＭ", "LLM", True),  # NFKC: full-width letters are letters
    ("Transformer", "TRANSFORMERS", False),
    ("Transformer*", "TRANSFORMERS", True),
    ("C++", "written in C++ and Rust", True),
    ("café", "CAFÉ culture", True),
    ("cafe", "café", False),  # terms are accent-sensitive; authors and institutions are not
]


@pytest.mark.parametrize(("term", "text", "expected"), TERMS)
def test_term(term: str, text: str, expected: bool) -> None:
    assert compile_term(term).search(normalize(text)) is expected


def test_latex_dollars_do_not_hide_words() -> None:
    clustering = seed("Clustering as Reasoning")  # "A $k$-Means Interpretation of ..."
    assert _match(clustering, any=("k-means",)) == (Hit("k-means", "title"),)


def test_bad_regex_is_an_error() -> None:
    with pytest.raises(re.error):
        compile_term("/(unclosed/")


def _match(paper: Paper, **criteria: object) -> tuple[Hit, ...] | None:
    return TopicMatcher(Criteria(**criteria)).match(paper)  # type: ignore[arg-type]


def _synthetic(**fields: object) -> Paper:
    title = str(fields.pop("title", "A Synthetic Paper"))
    return Paper(paper_id=paper_id(title), title=title, **fields)  # type: ignore[arg-type]


def test_any_reports_every_term_and_field() -> None:
    hits = _match(seed("MineDraft"), any=("speculative decoding", "推测解码", "survey"))
    assert hits == (
        Hit("speculative decoding", "title"),
        Hit("推测解码", "title"),
        Hit("推测解码", "summary"),
    )


def test_default_fields_are_title_and_summary() -> None:
    paper = seed("DyLLM")  # "accepted at ICML 2026" is in its comments only
    assert _match(paper, any=("accepted",)) is None
    assert _match(paper, any=("accepted",), fields=("comments",)) == (Hit("accepted", "comments"),)


def test_comments_field_includes_the_journal_ref() -> None:
    journal_only = _synthetic(journal_ref="Proceedings of ICML 2026")
    assert _match(journal_only, any=("proceedings",), fields=("comments",)) is not None


def test_all_needs_every_group_and_any_alternative_in_a_group() -> None:
    groups = (("diffusion", "扩散"), ("language model*", "LLM*"))
    assert _match(seed("DAPD"), all=groups) is not None
    assert _match(seed("Beyond Generative Priors"), all=groups) is None  # diffusion, no LM
    assert _match(seed("MineDraft"), all=groups) is None


def test_none_excludes() -> None:
    assert _match(seed("MineDraft"), any=("decoding",)) is not None
    assert _match(seed("MineDraft"), any=("decoding",), none=("batch",)) is None
    assert _match(seed("MineDraft"), any=("decoding",), none=("批量",)) is None


def test_authors_full_names_case_and_accent_insensitive() -> None:
    assert _match(seed("MineDraft"), authors=("bryan kian hsiang low",)) == (
        Hit("bryan kian hsiang low", "authors"),
    )
    assert _match(seed("MineDraft"), authors=("Bryan Low",)) is None  # full names only
    accented = _synthetic(authors=("Émile Durand", "Zoë Ångström"))
    assert _match(accented, authors=("Emile Durand",)) is not None
    assert _match(accented, authors=("zoe angstrom",)) is not None
    assert _match(accented, authors=("Emile",)) is None


def test_institutions_english_or_chinese_and_accent_insensitive() -> None:
    smart = seed("SmartThinker")  # Tsinghua University（清华大学）
    assert _match(smart, institutions=("清华大学",)) == (Hit("清华大学", "institutions"),)
    assert _match(smart, institutions=("tsinghua university",)) is not None
    assert _match(seed("DAPD"), institutions=("KAIST",)) is not None
    assert _match(seed("MineDraft"), institutions=("KAIST",)) is None
    zurich = _synthetic(institutions=(Institution("ETH Zürich", "苏黎世联邦理工学院"),))
    assert _match(zurich, institutions=("ETH Zurich",)) is not None
    assert _match(zurich, institutions=("苏黎世",)) is not None


def test_venues_case_insensitive_and_alone_a_topic() -> None:
    assert _match(seed("MineDraft"), venues=("icml",)) == (Hit("ICML", "venue"),)
    assert _match(seed("MineDraft"), venues=("NeurIPS",)) is None
    matcher = TopicMatcher(Criteria(venues=("ICML",)))
    assert all(matcher.match(p) is not None for p in seed_papers().values())


def test_every_given_criterion_must_hold() -> None:
    c = {"any": ("speculative decoding",), "institutions": ("MIT", "Massachusetts*")}
    assert _match(seed("MineDraft"), **c) is not None
    assert _match(seed("LK Losses"), **c) is None  # the term matches, the institution not


def test_a_topic_needs_a_positive_criterion() -> None:
    assert not Criteria(none=("survey",)).positive
    assert Criteria(venues=("ICML",)).positive
