"""The state on PostgreSQL beside SQLite: a first build and new 10-paper digests, the same
`feeds run` on the same corpus, the SQLite state measured first as the baseline.

    python benchmarks/postgres.py --papers 100000 --topics 100
    python benchmarks/postgres.py --papers 100000 --url postgresql://user@host/db  # yours

Each first build says its time, its peak memory (the run's and its helper's, as
child.py reports them), the files it wrote and their size, and when the last feed and the
search index were in place. Without --url, a PostgreSQL server of Debian's packages is
started on 127.0.0.1 for the run (as the tests start it: tests/postgres.py), with fsync
off as a test server has it;
--url measures a real one (its database should be empty). Each build is a child process
(`feeds run --offline`), search index included; --no-search leaves Pagefind out, so that
the state's share of a build shows more.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import write_digests, write_topics  # noqa: E402
from benchmarks.run import file_clock  # noqa: E402

INCREMENTS = 3


@dataclass(frozen=True)
class Build:
    """A first build: its wall time, peak memory (run + helper), and what it wrote."""

    wall: float
    peak_mb: int
    files: int
    disk_gb: float  # the files' sizes, summed
    feeds_at: float  # seconds until the last feed was in place
    search_at: float  # seconds until search/index.json was switched


def feeds_run(work: Path, state: str, public: str, env: dict[str, str]) -> tuple[float, int]:
    """Run `feeds run` through child.py: (wall seconds, peak memory in MB, run + helper)."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "child.py"), "run", "--offline",
           "--quiet", "--inbox", "inbox", "--state", state, "--public", public]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 3):
        sys.exit(f"feeds run failed ({done.returncode}):\n{done.stderr}")
    peaks = {"peak-kb": 0, "helper-peak-kb": 0}
    for line in done.stderr.splitlines():
        key, _, value = line.partition(" ")
        if key in peaks:
            peaks[key] = max(peaks[key], int(value))
    return wall, sum(peaks.values()) // 1024


def first_build(work: Path, state: str, public: str, env: dict[str, str]) -> Build:
    began = file_clock(work)  # the files' modification times say when each was in place
    wall, peak = feeds_run(work, state, public, env)
    out = work / public
    feeds_at = max(p.stat().st_mtime for p in (out / "feeds").iterdir()) - began
    index = out / "search" / "index.json"
    search_at = index.stat().st_mtime - began if index.exists() else float("nan")
    files, size = 0, 0
    for folder, _dirs, names in os.walk(out):
        for name in names:
            files += 1
            size += os.stat(os.path.join(folder, name)).st_size
    return Build(wall, peak, files, size / 1e9, feeds_at, search_at)


def measure(work: Path, inbox: Path, state: str, public: str, env: dict[str, str],
            seed: int) -> tuple[Build, list[float]]:  # fmt: skip
    """Return (the first build, each new digest's seconds)."""
    first = first_build(work, state, public, env)
    news = []
    for n in range(INCREMENTS):
        write_digests(work / "new", 10, 10, seed + n)
        for f in sorted((work / "new").glob("*.txt")):
            shutil.move(f, inbox / f"zz-{public}-{n}-{f.name}")
        news.append(feeds_run(work, state, public, env)[0])
    return first, news


def said(name: str, first: Build, news: list[float]) -> None:
    print(f"{name}: first build {first.wall:.1f}s (the feeds in place after "
          f"{first.feeds_at:.1f}s, search after {first.search_at:.1f}s), peak "
          f"{first.peak_mb:,} MB (run + helper), {first.files:,} files "
          f"({first.disk_gb:.1f} GB); new 10-paper digest "
          f"{statistics.median(news) * 1000:.0f} ms (median of {len(news)}: "
          f"{', '.join(f'{x * 1000:.0f}' for x in news)} ms)", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=100_000)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--url", help="a PostgreSQL database to use (default: start a server)")
    ap.add_argument("--no-search", action="store_true", help="build without Pagefind")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()

    env = dict(os.environ)
    if args.no_search:
        env["PAGEFIND_BINARY_PATH"] = os.devnull
    with ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="paperfeeds-bench-pg-"))
        if not args.keep:
            stack.callback(shutil.rmtree, work, ignore_errors=True)
        url = args.url
        if url is None:
            from tests.postgres import running

            url = stack.enter_context(running()).new_database()
        inbox = work / "inbox"
        write_digests(inbox, args.papers, 500, 1)
        write_topics(work / "config" / "subscriptions.yaml", args.topics, 1, narrow=True)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "feeds")], check=True)
        print(f"paperfeeds benchmark: the state on PostgreSQL beside SQLite; {args.papers:,} "
              f"papers, {args.topics} topics, {os.cpu_count()} cores, search "
              f"{'off' if args.no_search else 'on'}", flush=True)  # fmt: skip

        shown = url.rpartition("@")[2]
        # The same digests for both: each engine gets the new ones the other got.
        sq_first, sq_news = measure(work, inbox, "state.sqlite3", "public-sqlite", env, 99)
        said("SQLite", sq_first, sq_news)  # now: the PostgreSQL build takes as long again
        for f in sorted(inbox.glob("zz-*")):
            f.unlink()
        shutil.rmtree(work / ".paperfeeds", ignore_errors=True)  # its caches: none to reuse
        pg_first, pg_news = measure(work, inbox, url, "public-postgresql", env, 99)
        said(f"PostgreSQL ({shown})", pg_first, pg_news)
        print(f"PostgreSQL against SQLite: first build x{pg_first.wall / sq_first.wall:.2f}, "
              f"new digest x{statistics.median(pg_news) / statistics.median(sq_news):.2f} "
              "(its time over SQLite's)")  # fmt: skip
        if args.keep:
            print(f"kept: {work}")


if __name__ == "__main__":
    main()
