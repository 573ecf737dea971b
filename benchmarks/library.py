"""A big library as a topic (`library:`): reading a 10,000-item export, and runs under it,
each beside a baseline measured in the same run.

    python benchmarks/library.py                 # 10,000 items, 10,000 papers (~minutes)
    python benchmarks/library.py --small         # seconds: a smoke test
    python benchmarks/library.py --items 20000 --papers 50000

Phases:
  read   the library as BibTeX, RIS and CSL JSON through feeds.config.library.parse (LaTeX
         decoded, every item checked), beside the bare parser of each format on the same
         text (bibtexparser without decoding, rispy.loads of the whole file, json.loads)
  run    `feeds run --offline` over the papers with one topic whose `library:` is the
         BibTeX export, beside the same run with one `like:` topic of two examples: the
         first build, a new 10-paper digest, and a run with nothing new

The library's items are synthetic papers (benchmarks/generate.py) that are not among the
papers ingested, as a researcher's library holds older papers than the new ones.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import _file_rng, generate_digest  # noqa: E402
from feeds.config.library import parse  # noqa: E402
from feeds.model import Paper  # noqa: E402
from feeds.publish import cite  # noqa: E402
from feeds.sources.digest import parse as parse_digest  # noqa: E402


def papers(first: int, count: int, seed: int) -> list[Paper]:
    """Return `count` synthetic papers numbered from `first`."""
    out: list[Paper] = []
    per_file = 500
    for start in range(first, first + count, per_file):
        n = min(per_file, first + count - start)
        text = generate_digest(_file_rng(seed, start // per_file), start, n, "ICML")
        out += [p for _line, p in parse_digest(text.encode(), f"{start}.txt").papers]
    return out


def exports(items: list[Paper], folder: Path) -> dict[str, Path]:
    """Write the items as a Zotero-like BibTeX, RIS and CSL JSON export."""
    from datetime import UTC, datetime

    seen = datetime(2025, 1, 1, tzinfo=UTC)
    # An English abstract, as a library has: the synthetic summaries are Chinese.
    cited = [
        cite.citation(
            Paper(p.paper_id, p.title, authors=p.authors, venue=p.venue,
                  abstract=f"We study {p.title.lower()}."),
            (), seen, f"https://example.org/{p.paper_id}",
        )
        for p in items
    ]  # fmt: skip
    keys = cite.keys(cited)
    paths = {"bib": folder / "library.bib", "ris": folder / "library.ris",
             "json": folder / "library.json"}  # fmt: skip
    paths["bib"].write_text(
        "\n".join(cite.bibtex_entry(c, k) for c, k in zip(cited, keys, strict=True))
    )
    paths["ris"].write_text(
        "\n".join(cite.ris_entry(c, k) for c, k in zip(cited, keys, strict=True))
    )
    csl = [
        {"id": k, "type": "paper-conference", "title": c.title, "abstract": c.abstract,
         "author": [{"literal": a} for a in c.authors], "container-title": c.venue}
        for c, k in zip(cited, keys, strict=True)
    ]  # fmt: skip
    paths["json"].write_text(json.dumps(csl, ensure_ascii=False, indent=1))
    return paths


def timed(fn, *args):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def read_phase(paths: dict[str, Path], items: int) -> None:
    import bibtexparser
    import rispy

    bare = {
        "bib": lambda text: len(bibtexparser.parse_string(text).entries),
        "ris": lambda text: len(rispy.loads(text)),
        "json": lambda text: len(json.loads(text)),
    }
    kinds = {"bib": "bibtex", "ris": "ris", "json": "csljson"}
    for name, path in paths.items():
        text = path.read_text("utf-8")
        size = len(text.encode()) / 1e6
        library, ours = timed(parse, text, kinds[name], "subscriptions.yaml", 1, path.name)
        count, base = timed(bare[name], text)
        assert len(library.items) == items == count, (name, len(library.items), count)
        print(f"read {name:4} ({items:,} items, {size:.1f} MB): {ours:6.2f} s"
              f"   bare parser {base:6.2f} s   -> x{ours / base:.2f} the bare parser")  # fmt: skip


def feeds_run(work: Path) -> float:
    cmd = [sys.executable, "-m", "feeds", "run", "--offline", "--quiet", "--inbox", "inbox"]
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}  # a cache of its own
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        sys.exit(f"feeds run failed ({proc.returncode}):\n{proc.stderr}")
    return wall


def project(folder: Path, corpus: list[str], topic: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "inbox").mkdir()
    for i, text in enumerate(corpus):
        (folder / "inbox" / f"{i:03}.txt").write_text(text, encoding="utf-8")
    (folder / "config").mkdir()
    (folder / "config" / "subscriptions.yaml").write_text(f"topics:\n{topic}", encoding="utf-8")
    (folder / "config" / "settings.yaml").write_text("links:\n  check: false\n")
    return folder


def run_phase(work: Path, library: Path, papers_n: int, examples: list[str], seed: int) -> None:
    corpus = []
    per_file = 500
    for start in range(0, papers_n, per_file):
        n = min(per_file, papers_n - start)
        corpus.append(generate_digest(_file_rng(seed, start // per_file), start, n, "ICML"))
    new = generate_digest(_file_rng(seed, 9999), papers_n, 10, "ICML")
    like = "\n".join(f"      - {json.dumps(e, ensure_ascii=False)}" for e in examples)
    setups = {
        "like": f"  - id: mine\n    title: Mine\n    like:\n{like}\n",
        "library": f"  - id: mine\n    title: Mine\n    library: {library}\n",
    }
    times: dict[str, dict[str, float]] = {}
    for name, topic in setups.items():
        folder = project(work / name, corpus, topic)
        first = feeds_run(folder)
        (folder / "inbox" / "new.txt").write_text(new, encoding="utf-8")
        digest = feeds_run(folder)
        noop = feeds_run(folder)
        times[name] = {"first build": first, "new 10-paper digest": digest, "nothing new": noop}
    for phase in times["like"]:
        a, b = times["library"][phase], times["like"][phase]
        print(f"run {phase:20}: library topic {a:6.2f} s   like: topic {b:6.2f} s"
              f"   -> x{a / b:.2f} the like: topic")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--papers", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--small", action="store_true", help="200 items, 500 papers")
    args = ap.parse_args()
    if args.small:
        args.items, args.papers = 200, 500
    work = Path(tempfile.mkdtemp(prefix="paperfeeds-library-"))
    try:
        # The library: papers numbered after the corpus's, so none of them is ingested.
        items = papers(10_000_000, args.items, args.seed)
        paths = exports(items, work)
        print(f"library: {args.items:,} items; corpus: {args.papers:,} papers")
        read_phase(paths, args.items)
        run_phase(work, paths["bib"], args.papers, [items[0].title, items[1].title], args.seed)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
