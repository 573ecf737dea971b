"""The matching step of a cycle (update_members), and its jobs: papers of a range of arrival
order matched against some topics, in this process or in the helper (see feeds.parallel),
which receives the job without its matcher and loads its own from the cache."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from feeds.state import Store, encode_hits
from feeds.words import count

if TYPE_CHECKING:
    from feeds.match.fast import Matcher
    from feeds.model import Hit
    from feeds.state.records import SeqRange
    from feeds.topics import Criteria, Topic

Progress = Callable[[str], None]

PAPERS_PER_MATCH = 2_000  # ~0.1 s of matching: a part to share with the helper

# A paper that matches: its id and seq, its topics and their hits as the state stores them
# (store.encode_hits); what matching a part gives. Encoded by whichever process matched:
# strings cost the run less to receive and to store than Hit objects.
PaperMatches = tuple[str, int, list[tuple[str, str]]]
Matched = list[PaperMatches]


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

    for matched in shared(store.path, job, parts, total, here, begin):
        yield from matched


class Matching:
    """Matching papers against topics, a range of arrival order at a time (a part:
    first seq, the seq after the last, how many papers), in this process or in the helper
    (see feeds.parallel), which is sent it without its matcher and loads its own from the
    cache (see feeds.match.cache)."""

    def __init__(self, topics: tuple[tuple[str, Criteria], ...], unmatched_only: bool) -> None:
        self.topics = topics
        self.unmatched_only = unmatched_only
        self._matcher: Matcher | None = None
        self._encoded: dict[int, tuple[tuple[Hit, ...], str]] = {}  # see run

    def __getstate__(self) -> tuple[tuple[tuple[str, Criteria], ...], bool]:
        return self.topics, self.unmatched_only

    def __setstate__(self, state: tuple[tuple[tuple[str, Criteria], ...], bool]) -> None:
        self.topics, self.unmatched_only = state
        self._matcher = None
        self._encoded = {}

    def run(self, store: Store, part: SeqRange) -> Matched:
        if self._matcher is None:
            from feeds.match.cache import cached_matcher

            self._matcher = cached_matcher(self.topics)
        match, encoded = self._matcher.match, self._encoded
        first, end, _count = part
        out: Matched = []
        for seq, paper in store.papers_between(first, end, unmatched_only=self.unmatched_only):
            matches = match(paper)
            if matches:
                row = []
                for topic_id, hits in matches:
                    # Most hits are tuples the matcher keeps and hands out again: encoded
                    # once each, found by identity (a Hit hashes in Python, slowly). The
                    # entry holds the tuple: no other object gets its id while it is there.
                    known = encoded.get(id(hits))
                    if known is None:
                        if len(encoded) > 100_000:
                            encoded.clear()
                        known = encoded[id(hits)] = (hits, encode_hits(hits))
                    row.append((topic_id, known[1]))
                out.append((paper.paper_id, seq, row))
        return out


def update_members(
    topics: Sequence[Topic], store: Store, now: datetime, progress: Progress = lambda _m: None
) -> dict[str, int]:
    """The matching step of a cycle: update topic memberships as membership.plan and
    membership.Changes decide; return how many papers entered each topic."""
    prints = {t.id: t.fingerprint for t in topics}
    known = store.topic_fingerprints()
    waiting = store.has_unmatched()
    new_matches = dict.fromkeys(prints, 0)
    if known == prints and not waiting:  # the common no-op: nothing to decide or load
        return new_matches
    from feeds.match.membership import Changes, plan

    criteria = {t.id: t.criteria for t in topics}
    todo = plan(prints, known, papers_waiting=waiting)
    with store.transaction(), store.bulk_members():
        for topic_id in todo.drop:
            store.drop_topic(topic_id)
        for topic_ids, unmatched_only in todo.groups:
            job = Matching(tuple((t, criteria[t]) for t in topic_ids), unmatched_only)
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
    return new_matches
