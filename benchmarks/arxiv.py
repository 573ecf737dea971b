"""Measure harvesting arXiv entries beside parsing digests of the same papers, in one run.

    python benchmarks/arxiv.py [--entries 10000] [--page-size 100] [--topics 100]

The papers are the synthetic digests' (benchmarks/generate.py), written twice: as digest
files, and as the arXiv API's answers (the fake API's Atom, tests/arxivserver.py) to the
requests a first harvest makes (pages overlapping by one entry, as harvest.py pages),
with English abstracts of ~1,000 characters. Each is then timed in this process:

  harvest    each page parsed (atom.parse), decided on (harvest.after_page) and its new
             entries made papers (harvest.to_paper)
  XML floor  ElementTree parsing the same pages, and nothing else
  digest     feeds.sources.digest.parse of the same papers' digests: the rate to compare with
  store      the SQLite-rows floor of run.py (the state keeps no arXiv papers yet)
  match      the matcher over each set of papers (an arXiv paper's abstract in `summary`,
             which topics match either text in)

Only ratios mean something elsewhere; nothing here is a pass or fail.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import write_digests, write_topics  # noqa: E402
from benchmarks.run import store_floor  # noqa: E402
from feeds.config import load_subscriptions  # noqa: E402
from feeds.match.fast import Matcher  # noqa: E402
from feeds.model import Paper  # noqa: E402
from feeds.sources.arxiv.atom import parse as parse_atom  # noqa: E402
from feeds.sources.arxiv.harvest import (  # noqa: E402
    ArxivPaper,
    Cursor,
    Request,
    after_page,
    next_request,
    to_paper,
)
from feeds.sources.digest import parse as parse_digest  # noqa: E402
from tests.arxivserver import FakePaper, feed_xml  # noqa: E402

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
# The made-up method names of other papers' titles (`Kasobidi3`), which narrow topics look
# for: left out of the abstracts made of those titles, or every abstract would match.
_NAMES = re.compile(r"\b[A-Za-z]+[0-9]\b")
CATEGORIES = ("cs.CL", "cs.LG", "cs.AI", "cs.CV", "stat.ML", "cs.IR", "cs.RO")


def as_arxiv(papers: list[Paper], rng: random.Random) -> list[FakePaper]:
    """Return the papers as arXiv would list them in cs.CL, newest first, a minute apart:
    affiliations from the digest's institutions, an English abstract of other titles."""
    titles = [p.title for p in papers]
    fake = []
    for n, p in enumerate(papers):
        names = [i.name for i in p.institutions] or ["University of Somewhere"]
        authors = tuple((a, (names[k % len(names)],)) for k, a in enumerate(p.authors))
        abstract = _NAMES.sub("", ". ".join(rng.sample(titles, 9))) + "."
        others = tuple(rng.sample(CATEGORIES[1:], rng.randrange(3)))
        fake.append(
            FakePaper(
                arxiv_id=f"{2612 - n // 90_000:04d}.{n % 90_000 + 10_000:05d}",
                title=p.title,
                published=NOW - timedelta(minutes=n),
                categories=("cs.CL", *others),
                version=rng.choice((1, 1, 1, 2)),
                abstract=abstract,
                authors=authors,
                comment=p.comments,
                journal_ref=p.journal_ref,
            )
        )
    return fake


def harvest_pages(fake: list[FakePaper], page_size: int) -> list[tuple[Request, bytes]]:
    """Return the (request, answer) pairs of a first harvest of all the papers, replayed
    later: rendering the answers is not what is measured."""
    cursor, pages, seen = Cursor("cs.CL"), [], set[str]()
    backfill = timedelta(minutes=len(fake) + 1)
    while (request := next_request(cursor, NOW, backfill, page_size)) is not None:
        chunk = fake[request.start : request.start + request.max_results]
        body = feed_xml(
            chunk,
            query="cat:cs.CL",
            start=request.start,
            max_results=request.max_results,
            total=len(fake),
        )
        pages.append((request, body))
        step = after_page(cursor, request, parse_atom(body), NOW, seen.__contains__)
        seen.update(e.arxiv_id for e in step.new)
        cursor = step.cursor
    return pages


def harvest(pages: list[tuple[Request, bytes]]) -> tuple[list[ArxivPaper], float]:
    """Return the papers a harvest of the pages makes, and the seconds it took."""
    cursor, papers, seen = Cursor("cs.CL"), list[ArxivPaper](), set[str]()
    start = time.perf_counter()
    for request, body in pages:
        step = after_page(cursor, request, parse_atom(body), NOW, seen.__contains__)
        seen.update(e.arxiv_id for e in step.new)
        papers += [to_paper(e) for e in step.new]
        cursor = step.cursor
    return papers, time.perf_counter() - start


def xml_floor(pages: list[tuple[Request, bytes]]) -> float:
    start = time.perf_counter()
    for _request, body in pages:
        ET.fromstring(body)
    return time.perf_counter() - start


def match_rate(matcher: Matcher, papers: list[Paper]) -> tuple[float, float]:
    """Return papers matched a second, and topic hits a paper."""
    start = time.perf_counter()
    hits = sum(len(matcher.match(p)) for p in papers)
    return len(papers) / (time.perf_counter() - start), hits / len(papers)


def row(label: str, count: int, seconds: float, unit: str, note: str = "") -> None:
    print(f"{label:<38}{count / seconds:>9,.0f} {unit}/s  {note}".rstrip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--page-size", type=int, default=100)
    ap.add_argument("--topics", type=int, default=100)
    args = ap.parse_args()
    python = sys.version.split()[0]
    print(f"arXiv harvest benchmark: {args.entries:,} entries, pages of {args.page_size}, "
          f"{args.topics} topics; python {python}, {os.cpu_count()} cores")  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="paperfeeds-arxiv-bench-"))
    try:
        measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args: argparse.Namespace, work: Path) -> None:
    start = time.perf_counter()
    files = write_digests(work / "inbox", args.entries, 500, 1)
    blobs = [(f.name, f.read_bytes()) for f in files]
    topics = load_subscriptions(write_topics(work / "subscriptions.yaml", args.topics, narrow=True))
    digest_papers = [p for name, blob in blobs for _line, p in parse_digest(blob, name).papers]
    pages = harvest_pages(as_arxiv(digest_papers, random.Random(1)), args.page_size)
    atom_mb = sum(len(b) for _r, b in pages) / 1e6
    digest_mb = sum(len(b) for _n, b in blobs) / 1e6
    print(f"generated in {time.perf_counter() - start:.1f}s: {len(pages)} Atom pages "
          f"({atom_mb:.1f} MB), {len(blobs)} digests ({digest_mb:.1f} MB)\n")  # fmt: skip

    arxiv_papers, harvest_s = harvest(pages)
    floor_s = xml_floor(pages)
    start = time.perf_counter()
    parsed = sum(len(parse_digest(blob, name).papers) for name, blob in blobs)
    digest_s = time.perf_counter() - start
    n = len(arxiv_papers)
    assert n == args.entries == parsed, (n, parsed)
    row("harvest: parse + decide + to_paper", n, harvest_s, "entries",
        f"({harvest_s:.2f}s, {atom_mb / harvest_s:.1f} MB/s of Atom)")  # fmt: skip
    row("  XML floor: ElementTree alone", n, floor_s, "entries",
        f"-> harvesting is x{harvest_s / floor_s:.1f} the floor")  # fmt: skip
    row("  digest parse, the same papers", parsed, digest_s, "papers",
        f"-> harvesting runs at x{digest_s / harvest_s * n / parsed:.2f} the digest rate"
        f" ({digest_mb / digest_s:.1f} MB/s of digest)")  # fmt: skip

    as_papers = [replace(p.as_paper(), summary=p.abstract) for p in arxiv_papers]
    store_arxiv = store_floor(as_papers, work / "store-arxiv")
    store_digest = store_floor(digest_papers, work / "store-digest")
    row("store floor: SQLite rows", n, store_arxiv, "entries",
        f"(digest papers {parsed / store_digest:,.0f}/s)")  # fmt: skip

    matcher = Matcher([(t.id, t.criteria) for t in topics])
    arxiv_match, arxiv_hits = match_rate(matcher, as_papers)
    digest_match, digest_hits = match_rate(matcher, digest_papers)
    row("match", n, n / arxiv_match, "entries",
        f"({arxiv_hits:.1f} hits/paper; digest papers {digest_match:,.0f}/s,"
        f" {digest_hits:.1f} hits/paper: x{arxiv_match / digest_match:.2f})")  # fmt: skip

    total_arxiv = harvest_s + store_arxiv + n / arxiv_match
    total_digest = digest_s + store_digest + parsed / digest_match
    row("harvest + store floor + match", n, total_arxiv, "entries",
        f"(digest: parse + store floor + match {parsed / total_digest:,.0f} papers/s:"
        f" x{total_digest / total_arxiv * n / parsed:.2f})")  # fmt: skip
    # arXiv's terms allow one request every 3 s: what a harvest can bring at most.
    print(f"\narXiv's pace: one page of {args.page_size} every 3 s = "
          f"{args.page_size / 3:,.0f} entries/s at most")  # fmt: skip


if __name__ == "__main__":
    main()
