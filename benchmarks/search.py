"""Measure the search index on a large history: what a new digest costs to index against
indexing everything again, measured in the same run on the same state.

    python benchmarks/search.py --papers 100000          # ~5 minutes on 2 cores
    python benchmarks/search.py --papers 5000 --keep DIR  # a quick look

Steps: synthetic digests (benchmarks/generate.py) are published once without Pagefind (the
state and the pages); then, on that state, timed in this process:
  full      the whole index built from nothing (update_search over every paper)
  digest    a new 10-paper digest is ingested (without Pagefind) and the index brought up
            to date for its papers: the newest shard indexed again, nothing else
  changed   papers that changed without a change to what is searched (a link checked):
            each compared with what its shard indexed, nothing indexed
  no-op     update_search with nothing changed
and, beside the full index, Pagefind's own time on the same records (its floor: the same
shards, two at a time, its files returned in memory and not written), the files the index
holds and their disk usage (static hosts cap the number of files), and what a browser
loads for its first search: the runtime, one entry file and one metadata file per shard,
and for a one-word query one index chunk per shard and the ten results shown.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import write_digests  # noqa: E402
from feeds.config import load  # noqa: E402
from feeds.pipeline import run  # noqa: E402
from feeds.publish import search  # noqa: E402
from feeds.publish.paths import ALL, topic_path  # noqa: E402
from feeds.state import Store  # noqa: E402

T0 = datetime(2026, 12, 4, 7, 0, tzinfo=UTC)


def _config(work: Path, inbox: Path):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    config = load(ROOT / "config" / "subscriptions.yaml", None)
    links = replace(config.settings.links, check=False)
    s = replace(config.settings, inbox=(inbox,), public_dir=work / "public",
                state=work / "state.sqlite3", links=links)  # fmt: skip
    return replace(config, settings=s)


def _topics(config) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    topics = [(topic_path(ALL), "All papers", "Every paper, newest first")]
    return topics + [(topic_path(t.id), t.title, t.description or "") for t in config.topics]


def _timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def _without_pagefind(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    saved = os.environ.get("PAGEFIND_BINARY_PATH")
    os.environ["PAGEFIND_BINARY_PATH"] = os.devnull  # "no Pagefind": the run skips search
    try:
        return fn(*args, **kwargs)
    finally:
        if saved is None:
            del os.environ["PAGEFIND_BINARY_PATH"]
        else:
            os.environ["PAGEFIND_BINARY_PATH"] = saved


def _bundle(public: Path) -> tuple[int, int, int, int, int]:
    """Return (shards, bytes a first search loads before its words: the runtime, and for
    the primary and each shard its entry, metadata and WebAssembly (each merged index loads
    its own); bytes a one-word query adds: an index chunk per shard, ten fragments; files;
    bytes of disk they take)."""
    root = public / "search"
    shards = [p for p in (root / "p").iterdir() if p.is_dir()]
    (primary,) = root.glob("t-*")
    first = (primary / "pagefind.js").stat().st_size
    for d in [*shards, primary]:
        first += (d / "pagefind-entry.json").stat().st_size
        first += sum(p.stat().st_size for p in d.glob("*.pf_meta"))
        first += min(p.stat().st_size for p in d.glob("wasm.*.pagefind"))
    word = 0
    for d in shards:
        chunks = [p.stat().st_size for p in (d / "index").iterdir()]
        word += sum(chunks) // max(1, len(chunks))
    fragments = [p.stat().st_size for p in (shards[-1] / "fragment").iterdir()]
    word += 10 * sum(fragments) // max(1, len(fragments))
    files = [p.stat() for p in root.rglob("*") if p.is_file()]
    return len(shards), first, word, len(files), sum(st.st_blocks * 512 for st in files)


def pagefind_floor(store: Store) -> float:
    """Seconds Pagefind itself takes over the same records as the full index: the same
    shards, two at a time, its files returned in memory and written nowhere."""
    import tempfile as temp
    from concurrent.futures import ThreadPoolExecutor

    from feeds.publish.pagefind import index_records

    exe = search.pagefind_binary()
    assert exe is not None
    shards = []
    for first, end in search.shard_ranges(store.paper_count()):
        shards.append([(f"/papers/{page.paper.paper_id}.html", record)
                       for page in store.paper_pages(seqs=(first, end))
                       for record in search.paper_records(page.paper)])  # fmt: skip

    def index(records: list[tuple[str, bytes]]) -> None:
        with temp.TemporaryDirectory() as staging:
            index_records(exe, records, Path(staging) / "out", Path(staging), "floor",
                          lambda _rel: False)  # fmt: skip

    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(index, shards))
    return time.perf_counter() - start


def measure(papers: int, work: Path) -> None:
    exe = search.pagefind_binary()
    if exe is None:
        sys.exit("Pagefind is not installed (pip install 'pagefind[extended]')")
    inbox = work / "inbox"
    _, seconds = _timed(write_digests, inbox, papers)
    print(f"paperfeeds search benchmark: {papers:,} papers ({seconds:.1f}s to generate)")
    print(
        f"Pagefind {search.run_pagefind([str(exe), '--version'], 'v').split()[-1]}, "
        f"{os.cpu_count()} cores; shards of {search.BIG:,}, the newest of {search.SMALL:,}"
    )
    config = _config(work, inbox)
    _, seconds = _timed(_without_pagefind, run, config, now=lambda: T0)
    print(f"state and pages (no search): {seconds:.1f}s")
    public, topics = work / "public", _topics(config)

    store = Store(work / "state.sqlite3", T0)
    try:
        done, full = _timed(search.update_search, public, store, topics, None)
    finally:
        store.close()
    shards, first, word, files, disk = _bundle(public)
    print(f"\nfull index:      {full:7.2f}s  {done.papers:,} papers in {done.shards} shards "
          f"({done.papers / full:,.0f} papers/s); {files:,} files, {disk / 1e6:,.0f} MB "
          "on disk")  # fmt: skip
    store = Store(work / "state.sqlite3", T0)
    try:
        floor = pagefind_floor(store)
    finally:
        store.close()
    print(f"  Pagefind's own time on the same records (two at a time, nothing written): "
          f"{floor:.2f}s: the index takes x{full / floor:.2f} its floor")  # fmt: skip

    write_digests(work / "new", 10, 10, seed=99)
    for f in sorted((work / "new").glob("*.txt")):
        shutil.move(f, inbox / f"zz-new-{f.name}")
    _without_pagefind(run, config, now=lambda: T0 + timedelta(days=1))
    store = Store(work / "state.sqlite3", T0)
    try:
        count = store.paper_count()
        new = {p.paper_id for p, _seen in store.all_items(10)}
        done, digest = _timed(search.update_search, public, store, topics, new)
        print(f"new 10-paper digest: {digest * 1000:7.0f} ms  {done.papers:,} papers indexed "
              f"again ({done.shards} shard): x{full / digest:,.0f} faster than the full "
              "index")  # fmt: skip
        old = {p.paper_id for p in store.papers(range_ids(store, 1, min(count, 1000)))}
        done, changed = _timed(search.update_search, public, store, topics, old)
        print(f"{len(old):,} old papers changed, not their text: {changed * 1000:7.0f} ms, "
              f"{done.papers} papers indexed")  # fmt: skip
        done, noop = _timed(search.update_search, public, store, topics, set())
        print(f"nothing changed: {noop * 1000:7.0f} ms (finding Pagefind and its version)")
    finally:
        store.close()
    shards, first, word, files, disk = _bundle(public)
    print(f"\na first search loads the runtime and {shards + 1} indexes' entry, metadata "
          f"and WebAssembly, {first / 1024:,.0f} kB in all, then for a one-word query "
          f"~{word / 1024:,.0f} kB "
          f"(an index chunk per shard, ten results); {files:,} files, "
          f"{disk / 1e6:,.0f} MB on disk")  # fmt: skip


def range_ids(store: Store, first: int, end: int) -> list[str]:
    """Return the ids of papers of seqs [first, end)."""
    return [page.paper.paper_id for page in store.paper_pages(seqs=(first, end))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="work folder to keep (default: a temp one)")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        measure(args.papers, args.keep)
        return
    with tempfile.TemporaryDirectory(prefix="paperfeeds-search-bench-") as work:
        measure(args.papers, Path(work))


if __name__ == "__main__":
    main()
