"""Topics by example in the matching step: a topic's `like:` and `unlike:` examples found
in the state, the document frequencies that tf-idf needs kept in the state and brought up
to date, and a batch of papers scored. The similarity itself is similar.py's (pure).

A paper's membership is decided when it enters, with the document frequencies of that
moment: later papers change them a little, but a member is scored again only when its
topic changes (its examples or threshold), as every topic's members are."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from feeds.errors import ConfigError
from feeds.text import paper_id

if TYPE_CHECKING:
    from feeds.match.similar import DocFreq, Example, LikeTopic, Similar
    from feeds.model import Library, LibraryItem, Paper
    from feeds.state import Store
    from feeds.topics import Topic

DF_KEY = "similar:df"  # the document frequencies (similar.to_bytes, base64) ...
SEQ_KEY = "similar:seq"  # ... of the papers up to this arrival order (seq)

_PAPER_ID = re.compile(r"[0-9a-f]{16}")


def resolve(store: Store, topic: Topic, where: str) -> LikeTopic:
    """Return what a topic by example compares with: each `like:` example a stored paper
    (named by its title, paper id, arXiv id or DOI) or a description, and each item of its
    libraries (its title and abstract), whose papers it does not take.

    Raises ConfigError (at the topic's line in `where`) for an arXiv id, DOI or paper id
    that names no stored paper, with the closest titles."""
    from feeds.match.similar import DEFAULT_MIN_SIMILARITY, LikeTopic

    c = topic.criteria
    from_library = tuple(_library_example(store, item) for lib in c.library for item in lib.items)
    return LikeTopic(
        like=tuple(_example(store, text, topic, where) for text in c.like) + from_library,
        unlike=tuple(_example(store, text, topic, where) for text in c.unlike),
        min_similarity=DEFAULT_MIN_SIMILARITY if c.min_similarity is None else c.min_similarity,
        exclude=frozenset().union(*(lib.known() for lib in c.library)),
    )


def _library_example(store: Store, item: LibraryItem) -> Example:
    """Return a library item as an example: its title and abstract, and what the state
    knows of its paper when it is stored (its Chinese title and summary too: an English
    library then finds papers a digest describes in Chinese)."""
    from feeds.match.similar import Example, paper_text, title_label

    paper = store.paper(paper_id(item.title))
    if paper is None and item.arxiv_id:
        paper = store.paper_of_arxiv(item.arxiv_id)
    if paper is None:
        return Example(title_label(item.title), item.text)
    text = paper_text(paper)
    if item.abstract and item.abstract not in text:
        text += "\n" + item.abstract
    return Example(title_label(item.title), text)


def _example(store: Store, text: str, topic: Topic, where: str) -> Example:
    from feeds.match.similar import Example, closest
    from feeds.text import arxiv_id, normalize_doi

    found: Paper | None
    if arxiv := arxiv_id(text):  # 2601.00001, arXiv:2601.00001, 10.48550/arXiv.2601.00001
        found, kind = store.paper_of_arxiv(arxiv), "arXiv id"
    elif doi := normalize_doi(text):
        pid = store.paper_with_doi(doi)
        found, kind = (store.paper(pid) if pid else None), "DOI"
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


def reason(df: DocFreq, s: Similar, paper: Paper, topic: LikeTopic) -> str:
    """Return why a topic by example takes a paper, as its item says it: the example it
    is most similar to, how much, and the words that weighed most ("MineDraft (0.41):
    speculative, draft, 推测解码"; a long example quoted briefly)."""
    from feeds.match.similar import paper_text, words

    found = words(df, paper_text(paper), topic.like[s.example].text)
    return f"{s.label} ({s.score:.2f})" + (f": {', '.join(found)}" if found else "")


NEAR = 0.7  # `feeds check` shows the papers scoring this fraction of a threshold or more


def report(
    store: Store, topics: Sequence[Topic], where: str, *, why: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """Return what `feeds check` says of the topics by example, with `--json` and without:
    per topic its examples and threshold, the stored papers it takes with their scores,
    those `unlike:` removed and those just below the threshold (to tune it by); `why`
    (`--explain` of one topic) names the words that weighed most for each."""
    from feeds.match import similar
    from feeds.words import count, shorten

    like_topics = [t for t in topics if t.criteria.by_example]
    if not like_topics:
        return {}, []
    df, counted = kept_frequencies(store)
    papers = list(store.papers())
    if counted == 0 or df.n_docs < len(papers):  # not kept yet, or behind: counted now
        df = similar.add(similar.empty(), [similar.paper_text(p) for p in papers])
    doc: dict[str, Any] = {}
    lines = ["topics by example (score: similarity to the closest example):"]
    likes = [resolve(store, topic, where) for topic in like_topics]
    scorer = similar.Scorer(df, likes)
    for topic, like, found in zip(like_topics, likes, scorer.score(papers, near=NEAR), strict=True):
        ranked = sorted(found, key=lambda s: -s.score)
        taken = [s for s in ranked if s.passes]
        # Below the threshold, or above it but nearer an unlike example: removed by it.
        near = [s for s in ranked if not s.passes and s.score < like.min_similarity]
        unliked = [s for s in ranked if not s.passes and s.score >= like.min_similarity]
        examples = ", ".join(e.label for e in like.like[:20])
        lines.append(f"  {topic.id}: {count(len(taken), 'paper')} like {shorten(examples, 60)}"
                     f" (min_similarity {like.min_similarity:g})")  # fmt: skip
        lines += [line for lib in topic.criteria.library for line in library_lines(lib, "    ")]
        lines += [f"      {_line(df, papers[s.index], s, like, why)}" for s in taken[:10]]
        if len(taken) > 10:
            lines.append(f"      … and {len(taken) - 10:,} more")
        if unliked:
            lines.append("    removed by unlike (more like an unlike example):")
            lines += [f"      {s.score:.2f}  {shorten(papers[s.index].title, 60)}: more like"
                      f" {shorten(s.unlike_label or '', 40)} ({s.unlike_score:.2f})"
                      for s in unliked[:10]]  # fmt: skip
        if near:
            lines.append(f"    just below {like.min_similarity:g}:")
            lines += [f"      {_line(df, papers[s.index], s, like, why)}" for s in near[:5]]
        doc[topic.id] = {
            "min_similarity": like.min_similarity,
            "examples": [e.label for e in like.like],
            "libraries": [_library_json(lib) for lib in topic.criteria.library],
            "unlike": [e.label for e in like.unlike],
            "papers": [_scored_json(df, papers[s.index], s, like, why) for s in taken],
            "removed_by_unlike": [_scored_json(df, papers[s.index], s, like, why) for s in unliked],
            "just_below": [_scored_json(df, papers[s.index], s, like, why) for s in near],
        }
    return doc, lines


def _line(df: DocFreq, paper: Paper, s: Similar, like: LikeTopic, why: bool) -> str:
    """Return a paper's line in `feeds check`: its score, title, and (`why`) the example
    it is most like and the words that weighed most."""
    from feeds.words import shorten

    line = f"{s.score:.2f}  {shorten(paper.title, 80)}"
    return f"{line} — similar to {shorten(reason(df, s, paper, like), 80)}" if why else line


def library_report(topics: Sequence[Topic]) -> tuple[dict[str, Any], list[str]]:
    """Return what `feeds check` says of the topics' libraries before any paper is stored
    (reading them needs no state): per topic, each library's items and what was skipped."""
    doc = {t.id: [_library_json(lib) for lib in t.criteria.library]
           for t in topics if t.criteria.library}  # fmt: skip
    lines = ["libraries:"] if doc else []
    for topic in topics:
        if topic.criteria.library:
            lines.append(f"  {topic.id}:")
            lines += [ln for lib in topic.criteria.library for ln in library_lines(lib, "    ")]
    return doc, lines


def library_lines(lib: Library, indent: str) -> list[str]:
    """Return the lines that say what a library gave: how many items were read and used,
    and each one skipped, at its file:line, with why (the first 20)."""
    from feeds.words import count

    said = f"{count(lib.read, 'item')} read, {len(lib.items):,} used, {len(lib.skipped):,} skipped"
    lines = [f"{indent}library {lib.path}: {said}"]
    lines += [f"{indent}  skipped {d}" for d in lib.skipped[:20]]
    if len(lib.skipped) > 20:
        lines.append(f"{indent}  … and {len(lib.skipped) - 20:,} more skipped")
    return lines


def _library_json(lib: Library) -> dict[str, Any]:
    skipped = [{"file": d.file, "line": d.line, "why": d.message} for d in lib.skipped]
    return {"path": lib.path, "read": lib.read, "used": len(lib.items), "skipped": skipped}


def _scored_json(
    df: DocFreq, paper: Paper, s: Similar, like: LikeTopic, why: bool
) -> dict[str, Any]:
    out = {"paper_id": paper.paper_id, "title": paper.title, "score": round(s.score, 4),
           "similar_to": s.label}  # fmt: skip
    if why:
        out["why"] = reason(df, s, paper, like)
    if s.unlike_label is not None:
        out |= {"unlike": s.unlike_label, "unlike_score": round(s.unlike_score, 4)}
    return out
