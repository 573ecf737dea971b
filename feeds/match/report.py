"""What `feeds check` reports: per topic, what it matches among the stored papers. Pure.

One pass over the papers with the automaton matcher (feeds.match.fast.Matcher), whatever the
number of topics: the straightforward matcher, one regular expression per term per topic
per paper, took hours over 100,000 papers and 1,000 topics. The terms that no stored paper
holds are found in the same pass: each is a topic of its own (a probe), the term alone in
the fields of the topic it belongs to, which matches exactly the papers that hold it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from feeds.errors import ConfigError
from feeds.match.fast import Matcher
from feeds.model import Hit, Paper
from feeds.settings import Config
from feeds.topics import Criteria, Topic
from feeds.words import count, did_you_mean, shorten

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
            warnings.append(f"matches {matched:,} of {count(total, 'paper')}; is a term too broad?")
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


@dataclass(frozen=True)
class Explained:
    """A paper and why: the hits that make it match a topic, or the `none` terms that
    keep it out (each where it was found)."""

    paper_id: str
    title: str
    hits: tuple[Hit, ...]


@dataclass(frozen=True)
class Explanation:
    """What `feeds check --explain TOPIC` shows: every stored paper the topic matches, and
    every one its `none` terms exclude (that the rest of it would match), newest first."""

    topic: str
    papers: int  # stored papers read
    matched: tuple[Explained, ...]
    excluded: tuple[Explained, ...]


_ITSELF, _WITHOUT_NONE = "topic", "without none"  # ids in the explaining matcher


def explain_topic(topic: Topic, papers: Iterable[Paper]) -> Explanation:
    """Return the papers the topic matches with their hits, and those its `none` terms
    exclude with the none-terms' hits, by the matcher the runs use (see Explanation).

    The matcher is given the topic, the topic without `none`, and each none-term alone in
    the topic's fields (a probe, as check_topics has): a paper the second matches and the
    first does not is excluded, and the probes that match it say by which terms where."""
    c = topic.criteria
    topics = [(_ITSELF, c)]
    probes = [f"{_PROBE}{i}" for i in range(len(c.none))]
    if c.none:
        topics.append((_WITHOUT_NONE, replace(c, none=())))
        topics += [
            (p, _probe_criteria(("term", t, c.fields))) for p, t in zip(probes, c.none, strict=True)
        ]
    matcher = Matcher(topics)
    total = 0
    matched: list[Explained] = []
    excluded: list[Explained] = []
    for paper in papers:
        total += 1
        found = dict(matcher.match(paper))
        if _ITSELF in found:
            matched.append(Explained(paper.paper_id, paper.title, found[_ITSELF]))
        elif _WITHOUT_NONE in found:
            hits = tuple(h for p in probes for h in found.get(p, ()))
            excluded.append(Explained(paper.paper_id, paper.title, hits))
    return Explanation(topic.id, total, tuple(reversed(matched)), tuple(reversed(excluded)))


def reported(
    config: Config,
    papers: Iterable[Paper],
    now: datetime,
    warnings: Sequence[str] = (),
    quiet: bool = False,
    progress: Callable[[int], None] = lambda _n: None,
) -> tuple[dict[str, Any], list[str]]:
    """Return what `feeds check` prints, with `--json` and without: the config's
    `warnings` (feeds.config.warnings), check_topics' report of the papers, and the
    schedule's next times after `now` (by the trigger `feeds watch` runs)."""
    from feeds.schedule import next_times

    # Topics by example are compared, not matched: their report is likes.report's.
    by_terms = [t for t in config.topics if not t.criteria.by_example]
    total, reports = check_topics(by_terms, papers, progress)
    upcoming = next_times(config.settings, now)
    return (
        report_json(config, warnings, total, reports, upcoming),
        report_lines(config, warnings, total, reports, upcoming, quiet),
    )


def explained(topic: Topic, papers: Iterable[Paper]) -> tuple[dict[str, Any], list[str]]:
    """Return what `feeds check --explain` prints, with `--json` and without."""
    e = explain_topic(topic, papers)
    return explained_json(e), explain_lines(e)


def report_json(
    config: Config, warnings: Sequence[str], papers: int, reports: list[TopicReport],
    upcoming: list[datetime],
) -> dict[str, Any]:  # fmt: skip
    """Return what `feeds check --json` prints: the report, the config's warnings (valid,
    likely not meant) and the schedule's next times."""
    s = config.settings
    return {"config": "ok", "warnings": list(warnings),
            "papers": papers, "topics": [asdict(r) for r in reports],
            "schedule": {"cron": s.schedule_cron, "every": s.schedule_every,
                         "next": [t.isoformat() for t in upcoming]}}  # fmt: skip


def report_lines(
    config: Config, warnings: Sequence[str], papers: int, reports: list[TopicReport],
    upcoming: list[datetime], quiet: bool,
) -> list[str]:  # fmt: skip
    """Return what `feeds check` prints: the config's warnings as `file:line: warning: ...`,
    the schedule's next times, then per topic its count, a few titles and its warnings.
    `quiet` (`-q`, "only problems"): the warnings alone, a topic's as `id: warning: ...`;
    nothing when all is well."""
    from feeds.schedule import in_seconds, say_every, say_when

    if quiet:
        return [*warnings, *(f"{r.id}: warning: {w}" for r in reports for w in r.warnings)]
    lines = [f"{config.subscriptions_path}: ok, {count(len(config.topics), 'topic')}"]
    lines += warnings
    s = config.settings
    how = f"cron '{s.schedule_cron}'" if s.schedule_cron else f"every {say_every(s)}"
    lines.append(f"schedule of feeds watch: {how}, in UTC")
    lines += [f"  next: {say_when(when, seconds=in_seconds(s))}" for when in upcoming]
    if not papers:
        lines.append("no stored papers yet: run `feeds run` to see what each topic matches")
        return lines
    lines.append(f"against {count(papers, 'stored paper')}:")
    for r in reports:
        lines.append(f"  {r.id}: {count(r.matches, 'paper')}")
        lines += [f"      {shorten(title, 90)}" for title in r.examples]
        lines += [f"    warning: {warning}" for warning in r.warnings]
    return lines


def library_warnings(topics: Sequence[Topic], most: int = 20) -> list[str]:
    """Return what `feeds check -q` says of the topics' libraries: each item skipped, as a
    topic's warning (`id: warning: library refs.bib: skipped refs.bib:7: no title`), the
    first `most` of a library; nothing of a library that gave every item (cron mails
    every line, and a library read whole is no news)."""
    lines = []
    for topic in topics:
        for lib in topic.criteria.library:
            said = f"{topic.id}: warning: library {lib.path}:"
            lines += [f"{said} skipped {d}" for d in lib.skipped[:most]]
            if len(lib.skipped) > most:
                lines.append(f"{said} … and {len(lib.skipped) - most:,} more skipped")
    return lines


def topic_of(config: Config, topic_id: str) -> Topic:
    """Return the topic of that id, or raise ConfigError (a usage error) with a suggestion."""
    for topic in config.topics:
        if topic.id == topic_id:
            return topic
    also = did_you_mean(topic_id, (t.id for t in config.topics))
    where = config.subscriptions_path
    raise ConfigError(f"--explain: no topic {topic_id!r} in {where}{also}")


def explain_lines(e: Explanation) -> list[str]:
    """Return an explanation as `feeds check --explain` prints it: each paper's title, then
    why, as feed items say it ("matched: 推测解码 in summary")."""
    from feeds.match.hits import matched_text

    if not e.papers:
        return ["no stored papers yet: run `feeds run` to see what the topic matches"]
    lines = [f"{e.topic}: matches {count(len(e.matched), 'paper')} of {e.papers:,} stored"]
    for p in e.matched:
        lines += [f"  {shorten(p.title, 90)}", f"      matched: {matched_text(p.hits)}"]
    if e.excluded:
        lines.append(f"excluded by its none terms: {count(len(e.excluded), 'paper')}")
        for p in e.excluded:
            lines += [f"  {shorten(p.title, 90)}", f"      excluded: {matched_text(p.hits)}"]
    return lines


def explained_json(e: Explanation) -> dict[str, Any]:
    """Return an explanation as `--json` prints it: each paper's id, title, the line feed
    items say (`why`) and every hit."""
    from feeds.match.hits import matched_text

    def rows(papers: tuple[Explained, ...]) -> list[dict[str, Any]]:
        return [
            {"paper_id": p.paper_id, "title": p.title, "why": matched_text(p.hits),
             "hits": [{"term": h.term, "field": h.field} for h in p.hits]}
            for p in papers
        ]  # fmt: skip

    return {"topic": e.topic, "papers": e.papers, "matched": rows(e.matched),
            "excluded": rows(e.excluded)}  # fmt: skip
