"""The fast matcher (one automaton for all topics) gives exactly what the straightforward one
(every term's regular expression on every paper) gives."""

from __future__ import annotations

import itertools
import random
from functools import cache
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from feeds.config import FIELDS, Criteria
from feeds.match.fast import Matcher
from feeds.match.reference import TopicMatcher, match_papers
from feeds.model import Institution, Paper
from feeds.sources.digest import parse

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


@cache
def seed_papers() -> tuple[Paper, ...]:
    papers = []
    for path in sorted(SEEDS.glob("*.txt")):
        papers.extend(p for _line, p in parse(path.read_bytes(), path.name).papers)
    return tuple(papers)


@cache
def vocabulary() -> tuple[str, ...]:
    """Words, word pairs and Chinese fragments from the seeds, in many spellings."""
    words: set[str] = set()
    for p in seed_papers():
        latin = p.title.replace(":", " ").split()
        words.update(latin)
        words.update(f"{a}-{b}" for a, b in itertools.pairwise(latin))
        words.update(f"{a[:4]}*" for a in latin if len(a) > 5)
        for text in (p.title_zh or "", p.summary or ""):
            words.update(text[i : i + 2] for i in range(0, min(len(text), 40), 7))
        words.update(i.name.split(",")[0] for i in p.institutions)
        words.update(i.name_zh for i in p.institutions if i.name_zh)
    words.update(["LLM", "llm*", "ＬＬＭ", "/diffus(ion|e)/", "/^position:/", "C++", "é"])
    return tuple(sorted(w for w in words if w.strip("*-")))


def random_topics(rng: random.Random, n: int) -> list[tuple[str, Criteria]]:
    vocab = vocabulary()
    authors = sorted({a for p in seed_papers() for a in p.authors})
    topics = []
    for i in range(n):
        kind = rng.random()
        terms = tuple(rng.sample(vocab, rng.randint(1, 6)))
        criteria = Criteria(
            any=terms if kind < 0.8 else (),
            all=tuple(tuple(rng.sample(vocab, 2)) for _ in range(rng.randint(0, 2))),
            none=tuple(rng.sample(vocab, rng.randint(0, 2))),
            fields=tuple(rng.sample(FIELDS, rng.randint(1, 4))),
            authors=tuple(rng.sample(authors, 2)) if rng.random() < 0.1 else (),
            institutions=tuple(rng.sample(vocab, 2)) if rng.random() < 0.15 else (),
            venues=("ICML",) if rng.random() < 0.1 else (),
        )
        if not criteria.positive:
            criteria = Criteria(any=terms)
        topics.append((f"t{i}", criteria))
    return topics


def both(topics: list[tuple[str, Criteria]], papers: tuple[Paper, ...]) -> tuple[list, list]:  # type: ignore[type-arg]
    slow = list(match_papers([(tid, TopicMatcher(c)) for tid, c in topics], papers))
    fast_matcher = Matcher(topics)
    fast = [(tid, p.paper_id, hits) for p in papers for tid, hits in fast_matcher.match(p)]
    return slow, fast


def test_same_results_on_the_seeds_for_random_topic_sets() -> None:
    for seed in range(25):
        slow, fast = both(random_topics(random.Random(seed), 60), seed_papers())
        assert fast == slow, f"seed {seed}"
        assert slow, "the topic sets should match something"


def test_same_results_for_the_example_config() -> None:
    from feeds.config import load_subscriptions

    topics = load_subscriptions(
        Path(__file__).resolve().parent.parent / "config/subscriptions.yaml"
    )
    slow, fast = both([(t.id, t.criteria) for t in topics], seed_papers())
    assert fast == slow
    assert len(fast) > 60


_text = st.text(
    alphabet=st.sampled_from(list("abcdefgLLMllm -_‐$扩散模型推理Éé.,;:()*+ïI")), max_size=40
)


TERMS = ["llm", "LLM*", "ll", "扩散", "扩散 模型", "a-b", "a b", "é", "e", "c", "/l+m/", "ab*"]
TERMS += ["$a", "I", "ï", "Éa", "模型LLM", "c++"]


@settings(max_examples=300, deadline=None)
@given(
    title=_text,
    summary=_text,
    inst=_text,
    terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=5),
    none=st.lists(st.sampled_from(["b", "推理", "ll*", "/x|y/"]), max_size=2),
)
def test_same_results_on_arbitrary_text(
    title: str, summary: str, inst: str, terms: list[str], none: list[str]
) -> None:
    paper = Paper(
        paper_id="p",
        title=title or "t",
        summary=summary,
        institutions=(Institution(inst, inst[::-1] or None),),
        venue="ICML",
    )
    topics = [
        ("any", Criteria(any=tuple(terms), none=tuple(none), fields=FIELDS)),
        ("all", Criteria(all=(tuple(terms), tuple(reversed(terms))), fields=("title",))),
        ("inst", Criteria(institutions=tuple(terms))),
    ]
    slow, fast = both(topics, (paper,))
    assert fast == slow
