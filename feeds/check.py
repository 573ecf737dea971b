"""What `feeds check` reports: per topic, what it matches among the stored papers. Pure.

One pass over the papers with the automaton matcher (feeds.match.Matcher), whatever the
number of topics: the straightforward matcher, one regular expression per term per topic
per paper, took hours over 100,000 papers and 1,000 topics. The terms that no stored paper
holds are found in the same pass: each is a topic of its own (a probe), the term alone in
the fields of the topic it belongs to, which matches exactly the papers that hold it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from feeds.match import Matcher
from feeds.model import Paper
from feeds.topics import Criteria, Topic

EXAMPLES = 3
BROAD = 0.5  # a term topic matching more than this share of all papers is suspicious
# After this many papers, the matcher is built again without the probes found so far: most
# terms turn up early, and a probe found need not be looked for again (~0.5 s a build at
# 1,000 topics; the probes doubled the time of a paper).
REBUILD_AT = (1_000, 10_000, 100_000)
_PROBE = "\x00"  # probe ids start with it; a topic id cannot (see configfile)
_Key = tuple[str, str, tuple[str, ...]]  # a probe: (kind, term, fields)


@dataclass(frozen=True)
class TopicReport:
    id: str
    title: str
    matches: int
    examples: tuple[str, ...]
    unmatched_terms: tuple[str, ...]
    warnings: tuple[str, ...]


def check_topics(
    topics: Sequence[Topic],
    papers: Iterable[Paper],
    progress: Callable[[int], None] = lambda _n: None,
) -> tuple[int, list[TopicReport]]:
    """Return how many papers there were and, per topic, its match count, a few example
    titles (the newest last in `papers` first) and warnings. `progress` is told the number
    of papers read every 10,000."""
    probes: dict[_Key, str] = {}  # probe ids
    for topic in topics:
        for key in _probe_keys(topic.criteria):
            probes.setdefault(key, f"{_PROBE}{len(probes)}")
    matcher: Matcher | None = None  # built at the first paper: none, nothing to build
    counts = {t.id: 0 for t in topics}
    examples: dict[str, deque[str]] = {t.id: deque(maxlen=EXAMPLES) for t in topics}
    found: set[str] = set()  # probes matched
    dropped = 0  # of them, those the matcher was built without
    total = 0
    for paper in papers:
        if matcher is None or (total in REBUILD_AT and len(found) > dropped):
            dropped = len(found)
            matcher = Matcher(
                [(t.id, t.criteria) for t in topics]
                + [(pid, _probe_criteria(key)) for key, pid in probes.items() if pid not in found]
            )
        total += 1
        if total % 10_000 == 0:
            progress(total)
        for topic_id, _hits in matcher.match(paper):
            if topic_id.startswith(_PROBE):
                found.add(topic_id)
            else:
                counts[topic_id] += 1
                examples[topic_id].append(paper.title)
    reports = []
    for topic in topics:
        matched = counts[topic.id]
        keys = _probe_keys(topic.criteria)
        unmatched = list(dict.fromkeys(k[1] for k in keys if probes[k] not in found))
        warnings = []
        c = topic.criteria
        if total and not matched:
            warnings.append("matches none of the stored papers")
        elif total and (c.any or c.all) and matched > BROAD * total and total >= 10:
            warnings.append(f"matches {matched} of {total} papers; is a term too broad?")
        if total and unmatched:
            warnings.append("terms that match no stored paper: " + ", ".join(unmatched))
        reports.append(
            TopicReport(
                id=topic.id,
                title=topic.title,
                matches=matched,
                examples=tuple(reversed(examples[topic.id])),  # newest first
                unmatched_terms=tuple(unmatched),
                warnings=tuple(warnings),
            )
        )
    return total, reports


def _probe_keys(c: Criteria) -> list[_Key]:
    """The terms of a topic to look for on their own, in the order the report names them:
    (kind, term, fields) each."""
    terms = [*c.any, *(t for group in c.all for t in group), *c.none]
    return [("term", t, c.fields) for t in terms] + [("institution", t, ()) for t in c.institutions]


def _probe_criteria(key: _Key) -> Criteria:
    """A topic that matches the papers holding the term: in the fields for a term, in the
    institutions for an institution (as a topic looks for each)."""
    kind, term, fields = key
    if kind == "term":
        return Criteria(any=(term,), fields=fields)
    return Criteria(institutions=(term,))
