"""The matching step of a cycle (update_members), and its jobs: papers of a range of arrival
order matched against some topics, in this process or in the helper (see feeds.parallel),
which receives the job without its matcher and loads its own from the cache."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from feeds.state import Store, encode_hits
from feeds.topics import Criteria
from feeds.words import count

if TYPE_CHECKING:
    from feeds.match.fast import Matcher
    from feeds.match.similar import LikeTopic, Scorer
    from feeds.model import Hit, Paper
    from feeds.state.records import SeqRange
    from feeds.topics import Topic

Progress = Callable[[str], None]

PAPERS_PER_MATCH = 2_000  # ~0.1 s of matching: a part to share with the helper

# A paper that matches: its id and seq, its topics and their hits as the state stores them
# (store.encode_hits); what matching a part gives. Encoded by whichever process matched:
# strings cost the run less to receive and to store than Hit objects.
PaperMatches = tuple[str, int, list[tuple[str, str]]]
Matched = list[PaperMatches]
_State = tuple[tuple[tuple[str, Criteria], ...], bool, tuple[tuple[str, "LikeTopic"], ...]]


def matched(store: Store, job: Matching, progress: Progress) -> Iterator[PaperMatches]:
    """Yield (paper id, seq, [(topic id, hits)]) for each paper of the job that matches a
    topic: a long history is matched by this process and the helper together."""
    from feeds.parallel import shared

    parts = store.seq_ranges(PAPERS_PER_MATCH, unmatched_only=job.unmatched_only)
    total, begun = sum(part.papers for part in parts), 0

    def begin(part: SeqRange) -> None:
        nonlocal begun
        begun += part.papers
        topics = count(len(job.topics), "topic")
        progress(f"matching: {begun:,} of {count(total, 'paper')} against {topics}")

    def here(part: SeqRange) -> Matched:
        return job.run(store, part)

    for matched in shared(store.path, job, parts, lambda part: part.papers, here, begin):
        yield from matched


class Matching:
    """Matching papers against topics, a range of arrival order at a time (a part:
    first seq, the seq after the last, how many papers), in this process or in the helper
    (see feeds.parallel), which is sent it without its matcher and loads its own from the
    cache (see feeds.match.cache)."""

    def __init__(
        self,
        topics: tuple[tuple[str, Criteria], ...],
        unmatched_only: bool,
        likes: tuple[tuple[str, LikeTopic], ...] = (),
    ) -> None:
        self.topics = topics
        self.unmatched_only = unmatched_only
        self.likes = likes  # topics by example, their examples found (see likes.resolve)
        self._matcher: Matcher | None = None
        self._scorer: Scorer | None = None  # the topics by example, made once per job
        self._encoded: dict[int, tuple[tuple[Hit, ...], str]] = {}  # see run

    def __getstate__(self) -> _State:
        return self.topics, self.unmatched_only, self.likes

    def __setstate__(self, state: _State) -> None:
        self.topics, self.unmatched_only, self.likes = state
        self._matcher = None
        self._scorer = None
        self._encoded = {}

    def run(self, store: Store, part: SeqRange) -> Matched:
        if self._matcher is None:
            from feeds.match.cache import cached_matcher

            self._matcher = cached_matcher(term_topics(self.topics))
        match, encode = self._matcher.match, self._encode
        first, end, _count = part
        papers = store.papers_between(first, end, unmatched_only=self.unmatched_only)
        out: Matched = []
        if not self.likes:  # topics of terms alone: the common case, kept lean
            for seq, paper in papers:
                matches = match(paper)
                if matches:
                    out.append((paper.paper_id, seq, [(t, encode(h)) for t, h in matches]))
            return out
        found = [(seq, paper, dict(match(paper))) for seq, paper in papers]
        self._by_example(store, found)
        for seq, paper, by_topic in found:
            row = [(t, encode(h)) for t, h in by_topic.items() if "\0" not in t]  # no probes
            if row:
                out.append((paper.paper_id, seq, row))
        return out

    def _encode(self, hits: tuple[Hit, ...]) -> str:
        # Most hits are tuples the matcher keeps and hands out again: encoded once each,
        # found by identity (a Hit hashes in Python, slowly). The entry holds the tuple: no
        # other object gets its id while it is there.
        known = self._encoded.get(id(hits))
        if known is None:
            if len(self._encoded) > 100_000:
                self._encoded.clear()
            known = self._encoded[id(hits)] = (hits, encode_hits(hits))
        return known[1]

    def _by_example(self, store: Store, found: list[tuple[int, Paper, dict[str, Any]]]) -> None:
        """Add to `found` the topics by example each paper is in: those whose terms (if
        any) it matched, whose `none` terms it did not, and whose examples it is like.

        Every paper is scored against every topic at once (see similar.Scorer), with the
        examples made into vectors once per job: thousands of topics by example cost
        about what as many topics of terms cost."""
        from feeds.match.hits import SIMILAR
        from feeds.match.likes import reason, scorer
        from feeds.model import Hit

        if self._scorer is None:  # the frequencies were kept by the step before any part
            self._scorer = scorer(store, [like for _id, like in self.likes])
        criteria = dict(self.topics)
        results = self._scorer.score([paper for _seq, paper, _m in found])
        for (topic_id, like), taken in zip(self.likes, results, strict=True):
            c = criteria[topic_id]
            narrowed = bool(replace(c, like=(), unlike=(), none=(), library=()).positive)
            for s in taken:
                _seq, paper, matches = found[s.index]
                if not s.passes or f"{topic_id}\0none" in matches:
                    continue
                terms = matches.get(f"{topic_id}\0terms", ())
                if narrowed and not terms:
                    continue
                why = reason(self._scorer.df, s, paper, like)
                matches[topic_id] = (*terms, Hit(why, SIMILAR))


def term_topics(topics: Sequence[tuple[str, Criteria]]) -> tuple[tuple[str, Criteria], ...]:
    """Return what the automaton matches: the topics of terms as they are, and for a topic
    by example its terms and its `none` terms as two probes (`id\0terms`, `id\0none`):
    its examples are compared after (see Matching._by_example)."""
    out = []
    for topic_id, c in topics:
        if not c.by_example:
            out.append((topic_id, c))
            continue
        terms = replace(c, like=(), unlike=(), min_similarity=None, none=(), library=())
        if terms.positive:
            out.append((f"{topic_id}\0terms", terms))
        if c.none:
            out.append((f"{topic_id}\0none", Criteria(any=c.none, fields=c.fields)))
    return tuple(out)


def update_members(
    topics: Sequence[Topic], store: Store, now: datetime, progress: Progress = lambda _m: None,
    where: str = "subscriptions",
) -> tuple[dict[str, int], tuple[str, ...]]:  # fmt: skip
    """The matching step of a cycle: update topic memberships as membership.plan and
    membership.Changes decide; return how many papers entered each topic, and what to
    tell beside (topics by example fitted anew).

    `where`: the subscriptions file, named by the ConfigError of a topic by example whose
    example names no stored paper."""
    prints = {t.id: t.fingerprint for t in topics}
    known = store.topic_fingerprints()
    waiting = store.has_unmatched()
    new_matches = dict.fromkeys(prints, 0)
    if known == prints and not waiting:  # the common no-op: nothing to decide or load
        return new_matches, ()
    from feeds.match.membership import Changes, plan

    notes: list[str] = []
    criteria = {t.id: t.criteria for t in topics}
    todo = plan(prints, known, papers_waiting=waiting)
    likes: dict[str, LikeTopic] = {}
    if any(t.criteria.by_example for t in topics):
        from feeds.match.likes import document_frequencies, resolve

        with store.transaction():  # kept before matching: the helper process reads them
            refitted = document_frequencies(store)
        if refitted:
            notes.append(refitted)
        likes = {t.id: resolve(store, t, where) for t in topics if t.criteria.by_example}
    with store.transaction(), store.bulk_members():
        for topic_id in todo.drop:
            store.drop_topic(topic_id)
        for topic_ids, unmatched_only in todo.groups:
            examples = tuple((t, likes[t]) for t in topic_ids if t in likes)
            job = Matching(tuple((t, criteria[t]) for t in topic_ids), unmatched_only, examples)
            changes = Changes(store.members_of(set(topic_ids), unmatched_only))
            batch: list[tuple[str, str, int, str]] = []
            for paper_id, seq, matches in matched(store, job, progress):
                enter, stay = changes.of(paper_id, seq, matches)
                batch += enter
                for topic_id, _pid, _seq, _hits in enter:
                    new_matches[topic_id] += 1
                for topic_id, hits in stay:
                    store.set_hits(topic_id, paper_id, hits)
                if len(batch) >= 10_000:
                    store.add_members(batch, now)
                    batch.clear()
            store.add_members(batch, now)
            for topic_id, paper_id in changes.gone():
                store.remove_member(topic_id, paper_id)
        for topic_id in todo.record:
            store.set_topic(topic_id, prints[topic_id])
        store.mark_matched()
    return new_matches, tuple(notes)
