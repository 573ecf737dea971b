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

from feeds.errors import ConfigError, ConfigErrors
from feeds.text import paper_id

if TYPE_CHECKING:
    from feeds.match.similar import DocFreq, Example, LikeTopic, Scorer, Similar
    from feeds.model import Library, LibraryItem, Paper
    from feeds.state import Store
    from feeds.topics import Topic

DF_KEY = "similar:df"  # the document frequencies (similar.to_bytes, base64) ...
SEQ_KEY = "similar:seq"  # ... of the papers up to this arrival order (seq)
# The frequencies papers are scored with, fitted from those above and kept while the
# papers have not grown by a tenth: thousands of topics' examples are then the same vectors
# from run to run (see Scorer's cache), and a paper's score means the same for longer.
FIT_KEY = "similar:fit"
REFIT = 1.1

_PAPER_ID = re.compile(r"[0-9a-f]{16}")


def resolve(store: Store, topic: Topic, where: str) -> LikeTopic:
    """Return what a topic by example compares with: each `like:` example a stored paper
    (named by its title, paper id, arXiv id or DOI) or a description, and each item of its
    libraries (its title and abstract), whose papers it does not take.

    Raises ConfigError for every arXiv id, DOI or paper id that names no stored paper, each
    at its own line in `where`, with the stored papers whose names are closest."""
    from feeds.match.similar import DEFAULT_MIN_SIMILARITY, LikeTopic

    c = topic.criteria
    examples: list[Example] = []
    errors: list[ConfigError] = []
    for text, line in _with_lines(topic):
        try:
            examples.append(_example(store, text, topic, where, line))
        except ConfigError as e:
            errors.append(e)
    if len(errors) == 1:
        raise errors[0]
    if errors:  # each said at its line, as every error of a config file is
        raise ConfigErrors(tuple(errors))
    from_library = tuple(_library_example(store, item) for lib in c.library for item in lib.items)
    return LikeTopic(
        like=tuple(examples[: len(c.like)]) + from_library,
        unlike=tuple(examples[len(c.like) :]),
        min_similarity=DEFAULT_MIN_SIMILARITY if c.min_similarity is None else c.min_similarity,
        exclude=frozenset().union(*(lib.known() for lib in c.library)),
    )


def _with_lines(topic: Topic) -> list[tuple[str, int]]:
    """Return a topic's `like:` then `unlike:` examples with their lines (the topic's line
    for a topic read without them, as a config cached by an earlier version)."""
    texts = (*topic.criteria.like, *topic.criteria.unlike)
    lines = topic.examples if len(topic.examples) == len(texts) else (topic.line,) * len(texts)
    return list(zip(texts, lines, strict=True))


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


def _example(store: Store, text: str, topic: Topic, where: str, line: int) -> Example:
    from feeds.match.similar import Example
    from feeds.text import arxiv_id, normalize_doi

    found: Paper | None
    if arxiv := arxiv_id(text):  # 2601.00001, arXiv:2601.00001, 10.48550/arXiv.2601.00001
        found, kind, name = store.paper_of_arxiv(arxiv), "arXiv id", arxiv
    elif doi := normalize_doi(text):
        pid = store.paper_with_doi(doi)
        found, kind, name = (store.paper(pid) if pid else None), "DOI", doi
    elif _PAPER_ID.fullmatch(text.strip()):
        found, kind, name = store.paper(text.strip()), "paper id", text.strip()
    else:  # a title names its paper whatever its case and punctuation; else a description
        paper = store.paper(paper_id(text))
        return Example.description(text) if paper is None else Example.of_paper(paper)
    if found is None:
        near = _closest_names(store, kind, name)
        also = f"; the closest: {'; '.join(near)}" if near else ""
        raise ConfigError(
            f"topic {topic.id!r}: no stored paper has the {kind} {text!r}{also}",
            file=where,
            line=line,
        )
    return Example.of_paper(found)


def _closest_names(store: Store, kind: str, name: str) -> list[str]:
    """Return the stored papers whose names of this kind are nearest to an unknown one, as
    `2612.00077 (MineDraft: A Framework ...)`: the one meant, when it was mistyped."""
    import difflib

    from feeds.words import shorten

    titles = {n.lower(): t for n, t in store.names(kind)}
    near = difflib.get_close_matches(name.lower(), list(titles), n=3, cutoff=0.6)
    return [f"{n} ({shorten(titles[n], 60)})" for n in near]


def example_warnings(store: Store, topics: Sequence[Topic], where: str) -> list[str]:
    """Return `feeds check`'s warnings of examples that are nearly a stored title (one or
    two letters off, as `file:line: warning: ...`): taken as descriptions, they are likely
    mistyped titles. One pass over the stored titles for all of them."""
    from feeds.match.similar import Example, Scorer
    from feeds.match.similar import LikeTopic as Like
    from feeds.text import arxiv_id, normalize_doi, title_key

    wanted: list[tuple[Topic, int, str, str]] = []  # topic, line, the text, its title key
    for topic in topics:
        for text, line in _with_lines(topic):
            if arxiv_id(text) or normalize_doi(text) or _PAPER_ID.fullmatch(text.strip()):
                continue
            if len(text) >= 12 and store.paper(paper_id(text)) is None:
                wanted.append((topic, line, text, title_key(text)))
    if not wanted:
        return []
    by_size: dict[int, list[int]] = {}  # the examples' keys by their length
    for i, (_topic, _line, _text, mine) in enumerate(wanted):
        by_size.setdefault(len(mine), []).append(i)
    sizes = {len(text) for _t, _l, text, _k in wanted}
    found: dict[int, str] = {}  # index in wanted -> the stored title it nearly is
    for title in store.titles():
        if not any(abs(len(title) - n) <= 4 for n in sizes):
            continue  # no example is near its length: no key to make
        key = title_key(title)
        for size in range(len(key) - 2, len(key) + 3):
            for i in by_size.get(size, ()):
                if i not in found and _edits(wanted[i][3], key) <= 2:
                    found[i] = title
    out = []
    df = kept_frequencies(store)[0]
    for i, title in sorted(found.items()):
        topic, line, text, _key = wanted[i]
        paper = store.paper(paper_id(title))
        score = 0.0
        if paper is not None:
            (got,) = Scorer(df, [Like((Example.description(text),))]).score([paper], floor=-1.0)
            score = got[0].score if got else 0.0
        out.append(f"{where}:{line}: warning: topic {topic.id!r}: {text!r} is no stored title;"
                   f" did you mean {title!r}? (as a description it scores {score:.2f}"
                   " against that paper)")  # fmt: skip
    return out


def _edits(a: str, b: str) -> int:
    """Return about how many one-letter edits turn a into b (difflib's opcodes: exact for
    the few scattered edits a mistyped title has)."""
    import difflib

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    # Two edits leave at least len - 2 characters in common: quick_ratio bounds that from
    # above in linear time, and turns nearly every pair away before the opcodes are made.
    if matcher.quick_ratio() * (len(a) + len(b)) < 2 * (max(len(a), len(b)) - 2):
        return 3
    ops = matcher.get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


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


def document_frequencies(store: Store) -> str | None:
    """Count in the papers that arrived since the document frequencies were last kept (a
    new digest costs its papers, not the history), keep them, and fit those papers are
    scored with anew once the papers have grown by a tenth (REFIT). Return what to tell
    of a new fit ("fitted anew on 1,100 papers (was 1,000)"), else None. Call in a
    transaction."""
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
    stored = None
    if last != counted:
        stored = base64.b64encode(similar.to_bytes(df)).decode()
        store.set_meta(DF_KEY, stored)
        store.set_meta(SEQ_KEY, str(last))
    fit = fitted_frequencies(store, fallback=False)
    if fit is not None and df.n_docs < fit.n_docs * REFIT:
        return None
    store.set_meta(FIT_KEY, stored or base64.b64encode(similar.to_bytes(df)).decode())
    if fit is None or not fit.n_docs:
        return None  # the first fit: nothing to compare with
    return (f"topics by example: document frequencies fitted anew on {df.n_docs:,} papers"
            f" (were {fit.n_docs:,})")  # fmt: skip


def fitted_frequencies(store: Store, *, fallback: bool = True) -> DocFreq | None:
    """Return the document frequencies papers are scored with (see FIT_KEY); without a
    fit (a state of an earlier version), the kept ones when `fallback`, else None."""
    from feeds.match import similar

    text = store.meta(FIT_KEY)
    if text:
        try:
            return similar.from_bytes(base64.b64decode(text))
        except ValueError:  # damaged: fitted again
            pass
    return kept_frequencies(store)[0] if fallback else None


def scorer(store: Store, likes: Sequence[LikeTopic]) -> Scorer:
    """Return a Scorer of these topics with the fitted document frequencies, their
    examples' vectors taken from the cache when they were made with the same frequencies
    (thousands of topics' examples took ~0.3 s to make on every run)."""
    import hashlib
    import zlib

    from feeds.cache import cache_dir, cache_read, cache_write
    from feeds.match.similar import Columns, Scorer

    df = fitted_frequencies(store)
    assert df is not None  # with fallback, always some
    texts = hashlib.sha256()
    for like in likes:
        for kind, examples in (("like", like.like), ("unlike", like.unlike)):
            texts.update(f"{kind}\x00{len(examples)}\x00".encode())
            for e in examples:
                texts.update(e.text.encode() + b"\x00")
    key = ("examples", df.n_docs, zlib.crc32(df.counts.tobytes()), texts.hexdigest())
    path = cache_dir() / f"examples-{zlib.crc32(str(store.path).encode()):08x}.pickle"
    found = cache_read(path, key)
    if isinstance(found, Columns):
        return Scorer(df, likes, columns=found)
    made = Scorer(df, likes)
    cache_write(path, key, made.columns)
    return made


def reason(
    df: DocFreq, s: Similar, paper: Paper, topic: LikeTopic, *, width: int | None = None
) -> str:
    """Return why a topic by example takes a paper, as its item says it: the example it
    is most similar to, how much, and the words that weighed most ("MineDraft (0.41):
    speculative, draft, 推测解码"; a long example quoted briefly). `width` quotes the
    example by at most that many characters: what is cut is its name, never the score
    and the words, which are what explains."""
    from feeds.match.explain import words
    from feeds.match.similar import paper_text
    from feeds.words import shorten

    found = words(df, paper_text(paper), topic.like[s.example].text)
    label = s.label if width is None else shorten(s.label, width)
    return f"{label} ({s.score:.2f})" + (f": {', '.join(found)}" if found else "")


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
    else:
        df = fitted_frequencies(store) or df  # what the papers were scored with
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
        shown = taken if why else taken[:10]  # `--explain` lists every paper it takes
        lines += [f"      {_line(df, papers[s.index], s, like, why)}" for s in shown]
        if len(taken) > len(shown):
            lines.append(f"      … and {len(taken) - len(shown):,} more")
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
    return f"{line} — similar to {reason(df, s, paper, like, width=60)}" if why else line


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
