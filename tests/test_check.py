"""`feeds check` counts each topic's matches among the stored papers, and the terms no paper
holds, in one pass with the automaton matcher: exactly what the straightforward way (every
topic's regular expressions over every paper, every term over every paper) reports."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from feeds.config import Criteria, Topic, load_subscriptions
from feeds.match import report as check
from feeds.match.fast import Matcher
from feeds.match.fields import paper_fields
from feeds.match.reference import TopicMatcher
from feeds.match.report import BROAD, EXAMPLES, TopicReport, check_topics
from feeds.model import Paper
from feeds.text import strip_accents
from tests.test_match_equivalence import random_topics, seed_papers

ROOT = Path(__file__).resolve().parent.parent


def straightforward(topics: Sequence[Topic], papers: Sequence[Paper]) -> list[TopicReport]:
    """What `feeds check` reported before it used the automaton (hours at 100,000 papers
    and 1,000 topics): the reference."""
    fields = [paper_fields(p) for p in papers]
    reports = []
    for topic in topics:
        matcher = TopicMatcher(topic.criteria)
        matched = [p for p, f in zip(papers, fields, strict=True) if matcher.match(p, f)]
        names = topic.criteria.fields
        unmatched = [
            t.text for t in matcher.terms if not any(t.search(f[n]) for f in fields for n in names)
        ]
        unmatched += [  # named as written (the compiled term is without accents)
            written
            for written, t in zip(topic.criteria.institutions, matcher.institutions, strict=True)
            if not any(t.search(strip_accents(f["institutions"])) for f in fields)
        ]
        unmatched = list(dict.fromkeys(unmatched))
        c, warnings = topic.criteria, []
        if papers and not matched:
            warnings.append("matches none of the stored papers")
        elif (
            papers and (c.any or c.all) and len(matched) > BROAD * len(papers) and len(papers) >= 10
        ):
            warnings.append(f"matches {len(matched)} of {len(papers)} papers; is a term too broad?")
        if papers and unmatched:
            warnings.append("terms that match no stored paper: " + ", ".join(unmatched))
        examples = tuple(p.title for p in matched[-EXAMPLES:][::-1])
        reports.append(
            TopicReport(topic.id, topic.title, len(matched), examples, tuple(unmatched),
                        tuple(warnings))
        )  # fmt: skip
    return reports


def _topics(seed: int, n: int) -> list[Topic]:
    return [Topic(tid, f"Topic {tid}", c) for tid, c in random_topics(random.Random(seed), n)]


def test_the_same_report_for_random_topic_sets() -> None:
    papers = seed_papers()
    for seed in range(15):
        topics = _topics(seed, 40)
        total, fast = check_topics(topics, iter(papers))
        assert total == len(papers)
        assert fast == straightforward(topics, papers), f"seed {seed}"
        assert any(r.matches for r in fast)
        assert any(r.unmatched_terms for r in fast)


def test_the_same_report_when_the_matcher_drops_the_probes_it_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The matcher is built again along the way without the terms found so far: after 5
    and 20 of the 60 papers here (after thousands in a real history)."""
    built: list[int] = []
    real = check.Matcher

    def counting(topics: list[tuple[str, Criteria]]) -> Matcher:
        built.append(len(topics))
        return real(topics)

    monkeypatch.setattr(check, "Matcher", counting)
    monkeypatch.setattr(check, "REBUILD_AT", (5, 20))
    papers = seed_papers()
    for seed in range(15, 25):
        built.clear()
        topics = _topics(seed, 40)
        assert check_topics(topics, iter(papers)) == (
            len(papers),
            straightforward(topics, papers),
        ), f"seed {seed}"
        assert len(built) == 3
        assert built[0] > built[1] > built[2] >= len(topics)  # fewer probes each time


def test_the_same_report_for_the_example_config_and_fewer_papers() -> None:
    topics = list(load_subscriptions(ROOT / "config" / "subscriptions.yaml"))
    for papers in (seed_papers(), seed_papers()[:12], seed_papers()[-3:]):
        total, fast = check_topics(topics, iter(papers))
        assert (total, fast) == (len(papers), straightforward(topics, papers))


def test_no_papers_no_warnings() -> None:
    topics = _topics(1, 5)
    assert check_topics(topics, ()) == (0, straightforward(topics, ()))
    assert all(r.warnings == () and r.matches == 0 for r in check_topics(topics, ())[1])
