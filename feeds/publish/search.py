"""Search on the static site: Pagefind's index of the papers and topics, in public/search/.

Pagefind builds the index and answers queries in the browser from static files; its binary
comes with the `pagefind[extended]` package, whose extended build splits Chinese text into
words. Pagefind cannot add to an index it wrote, so the papers are indexed in shards by
arrival order (the state's seq) and the browser merges them at query time (mergeIndex): a
new digest indexes again only the last, small shard, whatever the size of the history.

    search/index.json   what search.js reads: Pagefind's version, the primary index, shards
    search/t-<tag>/     the primary: the topics' index (English), with Pagefind's runtime
                        (pagefind.js, its worker and WebAssembly)
    search/p/<first>-<last>-<tag>/   the papers of seqs first..last: an index of their
                        English records, stemmed, and one of their Chinese records, split
                        into words (see paper_records); records.tsv: each paper's id and
                        the fingerprint of what was indexed of it

A folder is written once under a new name; index.json is then switched to the new set and
the folders it no longer names are removed: a browser never reads half an index. A folder
is trusted only with its `.complete.json`, written last, once every file Pagefind wrote
was read back whole (a full disk may cut them short while Pagefind says all went well),
and only while its files are still the ones listed there: any other is indexed again.

The index is built beside the matching and publishing (see Update), begun once the run has
stored its papers: Pagefind gets the records in memory, each as it is made, in child
processes that end with the run and work in temp folders named with its process id (see
feeds.publish.pagefind).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import threading
import time
import zlib
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from feeds.publish.content import esc
from feeds.publish.pagefind import (
    INDEX_FILES,
    NOT_FOUND,
    Builder,
    Made,
    pagefind_binary,
    run_pagefind,
)
from feeds.publish.sealed import COMPLETE, RUNTIME, SearchError, complete, remove_leftovers

if TYPE_CHECKING:
    from feeds.model import Paper
    from feeds.state import Store

FORMAT = 2  # of the records and the layout: another format indexes everything again
BIG = 5000  # papers in a shard of the history; ~2 s and ~400 MB of Pagefind's to index
SMALL = 500  # papers in a shard of the newest part, not yet BIG together: ~0.4 s
__all__ = ["COMPLETE", "NOT_FOUND", "SearchError", "Update", "pagefind_binary", "update_search"]


@dataclass(frozen=True)
class Indexed:
    """What an update of the search index did."""

    shards: int = 0  # shards of papers indexed again
    papers: int = 0  # papers indexed (all of those shards')
    topics: bool = False  # the topics' index was written again
    note: str = ""  # why search is not available, when it is not


def shard_ranges(count: int) -> list[tuple[int, int]]:
    """Return the shards of a history of `count` papers: [first, end) ranges of seqs.

    Every BIG papers from the first make a shard that never changes again (unless one of its
    papers does); the rest, the newest, are cut every SMALL, so that a new paper costs at
    most a shard of SMALL to index. Once they add up to BIG they are indexed as one."""
    big = count // BIG
    ranges = [(k * BIG + 1, (k + 1) * BIG + 1) for k in range(big)]
    start = big * BIG + 1
    while start <= count:
        end = min(start + SMALL, count + 1)
        ranges.append((start, end))
        start = end
    return ranges


def paper_records(p: Paper) -> tuple[bytes, ...]:
    """Return what Pagefind indexes of a paper, as small HTML pages: its English record and,
    when it has Chinese text, its Chinese one.

    Pagefind indexes each language apart, English words stemmed and Chinese text split into
    words, and search.js asks the records of the query's script. A record's body is what a
    result quotes a line of: the abstract (the AI summary where there is none) in English;
    the AI summary in Chinese, then under a heading (the anchor #more, where search.js stops
    the line) the Chinese title and institutions, since Pagefind splits Chinese into words
    in the body only. The title, the Chinese title, the authors and the venue are metadata,
    shown with a result and searched (Pagefind 1.5 searches metadata), never quoted as its
    line; so are, in English, the institutions, arXiv id and categories."""
    shown = [("title", p.title), ("zh", p.title_zh), ("authors", ", ".join(p.authors)),
             ("venue", p.venue)]  # fmt: skip
    more = [*(i.name for i in p.institutions), p.arxiv_id, *p.categories]
    english = _record("en", [*shown, ("more", " ".join(filter(None, more)))],
                      [p.abstract or p.summary or p.title])  # fmt: skip
    chinese = [p.summary, p.title_zh, *(i.name_zh for i in p.institutions)]
    if not any(chinese):
        return (english,)
    return english, _record("zh", shown, chinese[:1], chinese[1:])


def topic_record(title: str, description: str) -> bytes:
    """Return what Pagefind indexes of a topic: its title and description."""
    return _record("en", [("title", title)], [description or title])


def _record(language: str, meta: Sequence[tuple[str, str | None]], body: Sequence[str | None],
            rest: Sequence[str | None] = ()) -> bytes:  # fmt: skip
    # Metadata from the text of elements Pagefind keeps out of the body, so that no excerpt
    # repeats it (an attribute's "key:value" pairs would be split at commas).
    fields = "".join(f'<p data-pagefind-meta="{key}">{esc(text)}</p>' for key, text in meta if text)
    text = "".join(f"<p>{esc(t)}</p>" for t in body if t)
    if any(rest):  # a heading with an id: Pagefind's sub-results end the body's excerpt there
        text += '<h2 id="more">·</h2>' + "".join(f"<p>{esc(t)}</p>" for t in rest if t)
    html = (
        f'<!DOCTYPE html><html lang="{language}"><head><meta charset="utf-8"></head><body>'
        f"<div data-pagefind-ignore>{fields}</div>{text}</body></html>"
    )
    return html.encode("utf-8")


def paper_fingerprint(paper: Paper) -> str:
    """Return what tells whether a paper's records changed since they were indexed."""
    return fingerprint(b"".join(paper_records(paper)))


def fingerprint(record: bytes) -> str:
    """Return what tells whether a record changed since it was indexed."""
    return f"{zlib.crc32(record):08x}{len(record):x}"


def _tag(*parts: object) -> str:
    return f"{zlib.crc32(json.dumps(parts).encode()):08x}"


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _records_of(folder: Path) -> dict[str, str]:
    """Return a shard's records.tsv: fingerprint by paper id ({} when unreadable)."""
    try:
        lines = (folder / "records.tsv").read_text("utf-8").splitlines()
    except OSError:
        return {}
    return dict(line.split("\t", 1) for line in lines if "\t" in line)


def _languages(folder: Path) -> list[str]:
    """Return the languages of a folder's index (each is searched on its own)."""
    entry = _read_manifest(folder / "pagefind-entry.json") or {}
    return sorted(entry.get("languages") or ())


def _papers(store: Store, first: int, end: int) -> Iterator[Paper]:
    # The papers alone: a record holds nothing of their links and topics.
    return (paper for _seq, paper in store.papers_between(first, end, unmatched_only=False))


def _stale_shards(
    store: Store, root: Path, kept: dict[tuple[int, int], str], changed: Collection[str] | None
) -> set[tuple[int, int]]:
    """Return the kept shards holding a paper whose record is not what was indexed: of the
    changed papers, or (None) of all papers, each shard read through."""

    stale: set[tuple[int, int]] = set()
    if changed is None:
        for (first, end), folder in kept.items():
            indexed = _records_of(root / folder)
            for paper in _papers(store, first, end):
                if indexed.get(paper.paper_id) != paper_fingerprint(paper):
                    stale.add((first, end))
                    break
        return stale
    by_shard: dict[tuple[int, int], list[str]] = {}
    ranges = sorted(kept)
    for pid, seq in store.seqs_of(changed).items():
        for first, end in ranges:  # a few dozen shards, a few changed papers
            if first <= seq < end:
                by_shard.setdefault((first, end), []).append(pid)
                break
    for shard, ids in by_shard.items():
        indexed = _records_of(root / kept[shard])
        for page in store.paper_pages(ids):
            if indexed.get(page.paper.paper_id) != paper_fingerprint(page.paper):
                stale.add(shard)
                break
    return stale


class _Shard:
    """The records of the papers of seqs first..end-1 (see pagefind.Records), read and made
    as Pagefind reads them, on its sender's thread and a connection of their own: Pagefind
    starts on the first paper while the others are read."""

    def __init__(self, state: Path | str, first: int, end: int, version: str) -> None:
        self.state, self.first, self.end, self.version = state, first, end, version
        self.text: str | None = None  # records.tsv, once every record was made

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        from feeds.state import Store

        self.text = None
        lines = []
        store = Store.reader(self.state)
        try:
            for paper in _papers(store, self.first, self.end):
                # Pagefind keeps one record of a URL: the Chinese one's is marked (search.js
                # links the page).
                url = f"/papers/{paper.paper_id}.html"
                made = paper_records(paper)
                lines.append(f"{paper.paper_id}\t{fingerprint(b''.join(made))}\n")
                yield from zip((url, f"{url}#zh"), made, strict=False)
        finally:
            store.close()
        self.text = "".join(lines)

    def tsv(self) -> str:
        if self.text is None:  # a bug: asked before every record was made
            raise RuntimeError(f"records.tsv of papers {self.first}- asked for too soon")
        return self.text

    def name(self) -> str:
        tag = _tag(FORMAT, self.version, self.first, self.end, self.tsv())
        return f"p/{self.first}-{self.end - 1}-{tag}"


class Update:
    """An update of public/search/, begun beside the publishing and finished after it.

    Begun, it reads the state on a connection of its own, on a thread of its own, and has
    Pagefind index the shards to do while the feeds and pages are rendered (Pagefind runs
    at a lower priority: the feeds come first); `finish` waits for the rest, and only then
    names the new folders in index.json, once the pages they find are written. Used as a
    context manager around the publishing, it stops Pagefind if the publishing fails."""

    def __init__(
        self,
        public: Path,
        store: Store,
        topics: Sequence[tuple[str, str, str]],
        changed: Collection[str] | None,
        progress: Callable[[str], None] = lambda _m: None,
    ) -> None:
        """`topics`: (page path, title, description) of each reading list. `changed`: the
        papers that changed since the last publish, or None to compare every paper with
        what was indexed (a full build)."""
        self.root, self.progress = public / "search", progress
        self.said: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self.result: Indexed | BaseException | None = None
        self.manifest: dict[str, Any] | None = None
        self.named: set[str] = set()  # the folders the index.json found named
        self.builder: Builder | None = None
        self.thread: threading.Thread | None = None
        exe = pagefind_binary()
        if exe is None:
            self.result = Indexed(note=NOT_FOUND)
            return
        try:
            version = run_pagefind([str(exe), "--version"], "Pagefind's version").split()[-1]
        except SearchError as e:
            self.result = e
            return
        args = (exe, version, store.path, topics, None if changed is None else set(changed))
        self.thread = threading.Thread(target=self._run, args=args, daemon=True)
        self.thread.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        if error is not None:
            self.stop()

    def stop(self) -> None:
        """Stop Pagefind and wait for it: the index stays as it was."""
        if self.builder is not None:
            self.builder.stop()
        if self.thread is not None:
            self.thread.join()

    def finish(self) -> Indexed:
        """Wait for the shards still being indexed, then switch index.json to the new set
        and remove the folders it no longer names; return what was indexed.

        Raise SearchError when Pagefind failed: the index stays whole as it was."""
        if self.thread is not None:
            while (said := self.said.get()) is not None:  # None: the thread is done
                self.progress(said)
            self.thread.join()
        if isinstance(self.result, BaseException):
            raise self.result
        assert self.result is not None
        if self.manifest is not None:
            root, manifest = self.root, self.manifest
            tmp = root / f".index.json.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(manifest, indent=1) + "\n", "utf-8")
            os.replace(tmp, root / "index.json")
            named = {manifest["primary"], *(s["dir"] for s in manifest["shards"])}
            for folder in [*root.glob("t-*"), *root.glob("p/*")]:
                rel = folder.relative_to(root).as_posix()
                # Only ours: named by the index before, or sealed by a publish (one that
                # died before naming it). `search/t-notes/` of the user's stays.
                if rel not in named and (rel in self.named or (folder / COMPLETE).exists()):
                    shutil.rmtree(folder, ignore_errors=True)
        return self.result

    def _run(self, exe: Path, version: str, state: Path | str,
             topics: Sequence[tuple[str, str, str]], changed: set[str] | None) -> None:  # fmt: skip
        from feeds.state import Store

        try:
            store = Store.reader(state)
            try:
                self.result = self._index(exe, version, store, topics, changed)
            finally:
                store.close()
        except BaseException as e:  # noqa: BLE001 (raised by finish, on the run's thread)
            self.result = e
        finally:
            self.said.put(None)

    def _index(
        self,
        exe: Path,
        version: str,
        store: Store,
        topics: Sequence[tuple[str, str, str]],
        changed: set[str] | None,
    ) -> Indexed:
        root = self.root
        remove_leftovers(root, time.time())
        old = _read_manifest(root / "index.json") or {}
        listed = old.get("shards")
        folders = (
            [x.get("dir") for x in listed if isinstance(x, dict)]
            if isinstance(listed, list)
            else []
        )
        self.named = {str(d) for d in [old.get("primary"), *folders] if d}
        same = old.get("format") == FORMAT and old.get("pagefind") == version
        kept: dict[tuple[int, int], str] = {}
        if same:
            # A full build (--repair, or after a failed update) compares every file of
            # each folder; an update the top levels alone, not a fragment a paper.
            for s in old.get("shards", ()):
                if complete(root / s["dir"], deep=changed is None):
                    kept[int(s["first"]), int(s["end"])] = str(s["dir"])
        wanted = shard_ranges(store.paper_count())
        kept = {r: d for r, d in kept.items() if r in wanted}
        todo = [r for r in wanted if r not in kept]
        todo += sorted(_stale_shards(store, root, kept, changed))
        topic_records = {path: topic_record(title, about) for path, title, about in topics}
        prints = sorted((path, fingerprint(record)) for path, record in topic_records.items())
        primary = f"t-{_tag(FORMAT, version, prints)}"
        whole = complete(root / primary, deep=True)  # a few files: the topics'
        if not todo and same and old.get("primary") == primary and whole:
            return Indexed()
        root.mkdir(parents=True, exist_ok=True)
        self.builder = builder = Builder(exe, root)
        dirs = dict(kept)
        papers = 0
        try:
            futures: dict[tuple[int, int], Future[str]] = {}
            if not whole:
                self.said.put("search index: topics")
                records = [(f"/{path}", record) for path, record in topic_records.items()]
                topics_done = builder.submit(primary, Made(primary, records),
                                             (*INDEX_FILES, *RUNTIME))  # fmt: skip
            for n, (first, end) in enumerate(todo, 1):
                self.said.put(f"search index: papers {first:,}–{end - 1:,} ({n} of {len(todo)})")
                made = _Shard(store.path, first, end, version)
                futures[first, end] = builder.submit(f"p/{first}-{end - 1}", made, INDEX_FILES)
                papers += end - first
            if not whole:
                topics_done.result()
            for shard, future in futures.items():
                dirs[shard] = future.result()
        finally:
            builder.close()
        shards = [{"dir": dirs[r], "first": r[0], "end": r[1],
                   "languages": _languages(root / dirs[r])} for r in wanted]  # fmt: skip
        self.manifest = {"format": FORMAT, "pagefind": version, "primary": primary,
                         "shards": shards}  # fmt: skip
        return Indexed(len(todo), papers, old.get("primary") != primary)


def update_search(
    public: Path,
    store: Store,
    topics: Sequence[tuple[str, str, str]],
    changed: Collection[str] | None,
    progress: Callable[[str], None] = lambda _m: None,
) -> Indexed:
    """Bring public/search/ up to date with the state; return what was indexed (see Update:
    this begins it and waits for it).

    Raise SearchError when Pagefind fails: the index stays whole as it was."""
    return Update(public, store, topics, changed, progress).finish()
