"""What matching decides: which topics are matched against which papers, and how their
memberships change. Pure: the stored fingerprints and memberships and the matches come in,
decisions come out; the pipeline reads and stores (the shape of links/policy.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """The matching a cycle does."""

    drop: tuple[str, ...]  # topics gone from the config: their memberships go
    # (topic ids, whether only the papers waiting to be matched are matched against them)
    groups: tuple[tuple[tuple[str, ...], bool], ...]
    record: tuple[str, ...]  # topics whose fingerprint is stored once matched


def plan(wanted: Mapping[str, str], known: Mapping[str, str], *, papers_waiting: bool) -> Plan:
    """Return the matching to do, from the topics' fingerprints (of what decides membership)
    now and as stored: a new or edited topic is matched against the whole history, the
    others against the papers new or changed since the last match (if any wait)."""
    fresh = tuple(t for t in wanted if known.get(t) != wanted[t])
    steady = tuple(t for t in wanted if known.get(t) == wanted[t])
    groups = [(fresh, False), (steady, True)] if papers_waiting else [(fresh, False)]
    drop = tuple(sorted(known.keys() - wanted.keys()))
    return Plan(drop, tuple((ids, only) for ids, only in groups if ids), fresh)


# A membership to store: (topic id, paper id, the paper's seq, its hits as the state keeps
# them, see state.encode_hits).
Entry = tuple[str, str, int, str]


class Changes:
    """How a group's memberships change, decided paper by paper as the matches arrive (a
    long history is matched in parts and never held whole).

    `before`: the (topic id, paper id) memberships the group's matching may change: its
    topics' (all of them, or those of the papers waiting to be matched)."""

    def __init__(self, before: set[tuple[str, str]]) -> None:
        self._before = before
        self._stay: set[tuple[str, str]] = set()

    def of(
        self, paper_id: str, seq: int, matches: list[tuple[str, str]]
    ) -> tuple[list[Entry], list[tuple[str, str]]]:
        """Return a matching paper's memberships that are new (entering a topic: stored
        with today's date) and those it keeps ((topic id, hits): their entry date stays,
        their hits may have changed)."""
        enter: list[Entry] = []
        stay: list[tuple[str, str]] = []
        for topic_id, hits in matches:
            if (topic_id, paper_id) in self._before:
                self._stay.add((topic_id, paper_id))
                stay.append((topic_id, hits))
            else:
                enter.append((topic_id, paper_id, seq, hits))
        return enter, stay

    def gone(self) -> set[tuple[str, str]]:
        """Return the memberships that no longer match (an edited topic; a paper whose new
        information hits a `none` term), once every matching paper was given."""
        return self._before - self._stay
