"""The state on PostgreSQL beside SQLite: a first build and new 10-paper digests, the same
`feeds run` on the same corpus, the SQLite state measured first as the baseline.

    python benchmarks/postgres.py --papers 100000 --topics 100
    python benchmarks/postgres.py --papers 100000 --url postgresql://user@host/db  # yours

Without --url, a PostgreSQL server of Debian's packages is started on 127.0.0.1 for the
run (as the tests start it: tests/postgres.py), with fsync off as a test server has it;
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import write_digests, write_topics  # noqa: E402

INCREMENTS = 3


def feeds_run(work: Path, state: str, public: str, env: dict[str, str]) -> float:
    cmd = [sys.executable, "-m", "feeds", "run", "--offline", "--quiet", "--inbox", "inbox",
           "--state", state, "--public", public]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 3):
        sys.exit(f"feeds run failed ({done.returncode}):\n{done.stderr}")
    return wall


def measure(work: Path, inbox: Path, state: str, public: str, env: dict[str, str],
            seed: int) -> tuple[float, list[float]]:  # fmt: skip
    """Return (first build seconds, each new digest's seconds)."""
    first = feeds_run(work, state, public, env)
    news = []
    for n in range(INCREMENTS):
        write_digests(work / "new", 10, 10, seed + n)
        for f in sorted((work / "new").glob("*.txt")):
            shutil.move(f, inbox / f"zz-{public}-{n}-{f.name}")
        news.append(feeds_run(work, state, public, env))
    return first, news


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=100_000)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--url", help="a PostgreSQL database to use (default: start a server)")
    ap.add_argument("--no-search", action="store_true", help="build without Pagefind")
    args = ap.parse_args()

    env = dict(os.environ)
    if args.no_search:
        env["PAGEFIND_BINARY_PATH"] = os.devnull
    with ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="paperfeeds-bench-pg-"))
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
              f"{'off' if args.no_search else 'on'}")  # fmt: skip

        shown = url.rpartition("@")[2]
        # The same digests for both: each engine gets the new ones the other got.
        sq_first, sq_news = measure(work, inbox, "state.sqlite3", "public-sqlite", env, 99)
        for f in sorted(inbox.glob("zz-*")):
            f.unlink()
        shutil.rmtree(work / ".paperfeeds", ignore_errors=True)  # its caches: none to reuse
        pg_first, pg_news = measure(work, inbox, url, "public-postgresql", env, 99)
        results = {"SQLite": (sq_first, sq_news), f"PostgreSQL ({shown})": (pg_first, pg_news)}
        for name, (first, news) in results.items():
            print(f"{name}: first build {first:.1f}s; new 10-paper digest "
                  f"{statistics.median(news) * 1000:.0f} ms (median of {len(news)}: "
                  f"{', '.join(f'{x * 1000:.0f}' for x in news)} ms)")  # fmt: skip
        print(f"PostgreSQL against SQLite: first build x{pg_first / sq_first:.2f}, new digest "
              f"x{statistics.median(pg_news) / statistics.median(sq_news):.2f} "
              "(its time over SQLite's)")  # fmt: skip


if __name__ == "__main__":
    main()
