"""Topics by example in the matching step: a topic's `like:` and `unlike:` examples found
in the state, the document frequencies that tf-idf needs kept in the state and brought up
to date, and a batch of papers scored. The similarity itself is similar.py's (pure).

A paper's membership is decided when it enters, with the document frequencies of that
moment: later papers change them a little, but a member is scored again only when its
topic changes (its examples or threshold), as every topic's members are."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from feeds.errors import ConfigError
from feeds.text import paper_id

if TYPE_CHECKING:
    from feeds.match.similar import DocFreq, Example, LikeTopic, Similar
    from feeds.model import Paper
    from feeds.state import Store
    from feeds.topics import Topic

DF_KEY = "similar:df"  # the document frequencies (similar.to_bytes, base64) ...
SEQ_KEY = "similar:seq"  # ... of the papers up to this arrival order (seq)

_ARXIV_ID = re.compile(r"(?:arxiv:\s*)?(\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?",
                       re.IGNORECASE)  # fmt: skip
_PAPER_ID = re.compile(r"[0-9a-f]{16}")


def resolve(store: Store, topic: Topic, where: str) -> LikeTopic:
    """Return what a topic by example compares with: each example a stored paper (named by
    its title, paper id or arXiv id) or a description.

    Raises ConfigError (at the topic's line in `where`) for an arXiv id or paper id that
    names no stored paper, with the closest titles."""
    from feeds.match.similar import DEFAULT_MIN_SIMILARITY, LikeTopic

    c = topic.criteria
    return LikeTopic(
        like=tuple(_example(store, text, topic, where) for text in c.like),
        unlike=tuple(_example(store, text, topic, where) for text in c.unlike),
        min_similarity=DEFAULT_MIN_SIMILARITY if c.min_similarity is None else c.min_similarity,
    )


def _example(store: Store, text: str, topic: Topic, where: str) -> Example:
    from feeds.match.similar import Example, closest

    found: Paper | None
    if m := _ARXIV_ID.fullmatch(text.strip()):
        found, kind = store.paper_of_arxiv(m.group(1)), "arXiv id"
    elif _PAPER_ID.fullmatch(text.strip()):
        found, kind = store.paper(text.strip()), "paper id"
    else:  # a title names its paper whatever its case and punctuation; else a description
        paper = store.paper(paper_id(text))
        return Example.description(text) if paper is None else Example.of_paper(paper)
    if found is None:
        near = closest(text, store.titles())
        also = f"; the closest titles: {'; '.join(near)}" if near else ""
        raise ConfigError(
            f"topic {topic.id!r}: no stored paper has the {kind} {text!r}{also}",
            file=where,
            line=topic.line,
        )
    return Example.of_paper(found)


def kept_frequencies(store: Store) -> tuple[DocFreq, int]:
    """Return the document frequencies kept in the state, and the last paper (seq) they
    count; empty ones for a state without any, or with damaged ones."""
    from feeds.match import similar

    text = store.meta(DF_KEY)
    if text:
        try:
            return similar.from_bytes(base64.b64decode(text)), int(store.meta(SEQ_KEY) or 0)
        except ValueError:  # damaged: counted again from the first paper
            pass
    return similar.empty(), 0


def document_frequencies(store: Store) -> DocFreq:
    """Return the document frequencies of every stored paper, counting in those that
    arrived since they were last kept (a new digest costs its papers, not the history),
    and keep them. Call in a transaction."""
    from feeds.match import similar

    df, counted = kept_frequencies(store)
    new: list[str] = []
    last = counted
    for seq, paper in store.papers_between(counted + 1, 1 << 62, unmatched_only=False):
        new.append(similar.paper_text(paper))
        last = seq
        if len(new) >= 10_000:  # a long history is counted in parts: bounded memory
            df = similar.add(df, new)
            new.clear()
    if new:
        df = similar.add(df, new)
    if last != counted:
        store.set_meta(DF_KEY, base64.b64encode(similar.to_bytes(df)).decode())
        store.set_meta(SEQ_KEY, str(last))
    return df


def scored(
    df: DocFreq, likes: Sequence[tuple[str, LikeTopic]], papers: Sequence[Paper]
) -> Iterable[tuple[int, str, str]]:
    """Yield (index in papers, topic id, why) for each paper a topic by example takes:
    why is "MineDraft (0.41)", the example it is most similar to and how much."""
    from feeds.match.similar import similar

    if not likes or not papers:
        return
    for (topic_id, _like), found in zip(
        likes, similar(df, [t for _id, t in likes], papers), strict=True
    ):
        for s in found:
            if s.passes:
                yield s.index, topic_id, f"{s.label} ({s.score:.2f})"


NEAR = 0.7  # `feeds check` shows the papers scoring this fraction of a threshold or more


def report(store: Store, topics: Sequence[Topic], where: str) -> tuple[dict[str, Any], list[str]]:
    """Return what `feeds check` says of the topics by example, with `--json` and without:
    per topic its examples and threshold, the stored papers it takes with their scores,
    and those just below the threshold (to tune it by)."""
    from feeds.match import similar
    from feeds.words import count, shorten

    like_topics = [t for t in topics if t.criteria.like]
    if not like_topics:
        return {}, []
    df, counted = kept_frequencies(store)
    papers = list(store.papers())
    if counted == 0 or df.n_docs < len(papers):  # not kept yet, or behind: counted now
        df = similar.add(similar.empty(), [similar.paper_text(p) for p in papers])
    doc: dict[str, Any] = {}
    lines = ["topics by example (score: similarity to the closest example):"]
    for topic in like_topics:
        like = resolve(store, topic, where)
        floor = like.min_similarity * NEAR
        (found,) = similar.similar(df, [like], papers, floor=floor)
        ranked = sorted(found, key=lambda s: -s.score)
        taken = [s for s in ranked if s.passes]
        near = [s for s in ranked if not s.passes]
        examples = ", ".join(e.label for e in like.like)
        lines.append(f"  {topic.id}: {count(len(taken), 'paper')} like {shorten(examples, 60)}"
                     f" (min_similarity {like.min_similarity:g})")  # fmt: skip
        lines += [f"      {s.score:.2f}  {shorten(papers[s.index].title, 80)}" for s in taken[:10]]
        if len(taken) > 10:
            lines.append(f"      … and {len(taken) - 10:,} more")
        if near:
            lines.append(f"    just below {like.min_similarity:g}:")
            lines += [
                f"      {s.score:.2f}  {shorten(papers[s.index].title, 80)}" for s in near[:5]
            ]
        doc[topic.id] = {
            "min_similarity": like.min_similarity,
            "examples": [e.label for e in like.like],
            "unlike": [e.label for e in like.unlike],
            "papers": [_scored_json(papers[s.index], s) for s in taken],
            "just_below": [_scored_json(papers[s.index], s) for s in near],
        }
    return doc, lines


def _scored_json(paper: Paper, s: Similar) -> dict[str, Any]:
    return {"paper_id": paper.paper_id, "title": paper.title, "score": round(s.score, 4),
            "similar_to": s.label}  # fmt: skip
