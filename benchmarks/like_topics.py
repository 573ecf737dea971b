"""Thousands of topics by example beside as many topics of terms, in real runs: what a user
pays for `like:` topics. Every number is printed beside the same step under term topics,
measured in the same run.

    python benchmarks/like_topics.py                       # 1,000 and 3,000 topics (~minutes)
    python benchmarks/like_topics.py --topics 10000 --papers 2000
    python benchmarks/like_topics.py --small               # seconds: a smoke test

For each number of topics, two projects over the same synthetic papers: one with topics of
terms (benchmarks/generate.py, narrow terms), one with as many topics by example (each
`like:` two stored papers' titles, or one of them and a description). Steps, each timed as
the command a user runs:
  add        the first `feeds run` after the topics were written (the papers are there)
  digest     `feeds run` with a new 1-paper digest
  check      `feeds check`
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import _file_rng, generate_digest, write_topics  # noqa: E402
from feeds.sources.digest import parse  # noqa: E402


def feeds(folder: Path, *args: str) -> float:
    """Run a feeds command in `folder`; return its wall time in seconds."""
    env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "feeds", *args], cwd=folder, env=env,
                          capture_output=True, text=True)  # fmt: skip
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        sys.exit(f"feeds {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall


RUN = ("run", "--offline", "--quiet", "--inbox", "inbox")


def like_topics(n: int, titles: list[str], seed: int) -> str:
    rng = random.Random(seed)
    out = ["topics:"]
    for i in range(n):
        a, b = rng.sample(titles, 2)
        second = b if i % 2 else f"{' '.join(b.split()[:4])} and related methods"
        out.append(f"  - id: like-{i}\n    title: Like {i}\n    like:\n"
                   f"      - {a!r}\n      - {second!r}")  # fmt: skip
    return "\n".join(out) + "\n"


def project(folder: Path, corpus: list[str], topics: str | Path) -> Path:
    (folder / "inbox").mkdir(parents=True)
    for i, text in enumerate(corpus):
        (folder / "inbox" / f"{i:03}.txt").write_text(text, encoding="utf-8")
    (folder / "config").mkdir()
    project_topics(folder, topics)
    (folder / "config" / "settings.yaml").write_text("links:\n  check: false\n")
    return folder


def project_topics(folder: Path, topics: str | Path) -> None:
    """Write the project's subscriptions: a file's copy, or the text given."""
    subs = folder / "config" / "subscriptions.yaml"
    if isinstance(topics, Path):
        shutil.copyfile(topics, subs)
    else:
        subs.write_text(topics, encoding="utf-8")


def measure(work: Path, n: int, papers: int, seed: int) -> dict[str, dict[str, float]]:
    per_file = 500
    corpus = [
        generate_digest(_file_rng(seed, i), i * per_file, min(per_file, papers - i * per_file),
                        "ICML")
        for i in range((papers + per_file - 1) // per_file)
    ]  # fmt: skip
    titles = [p.title for text in corpus for _l, p in parse(text.encode(), "x.txt").papers]
    new = generate_digest(_file_rng(seed, 99_999), papers, 1, "ICML")
    setups: dict[str, str | Path] = {
        "terms": write_topics(work / f"terms-{n}.yaml", n, seed, narrow=True),
        "like": like_topics(n, titles, seed),
    }
    times: dict[str, dict[str, float]] = {}
    for name, topics in setups.items():
        # The papers first, under one topic; then the topics are added.
        one = "topics:\n  - id: everything\n    title: Everything\n    venues: [ICML]\n"
        folder = project(work / f"{name}-{n}", corpus, one)
        feeds(folder, *RUN)
        project_topics(folder, topics)
        add = feeds(folder, *RUN)
        (folder / "inbox" / "new.txt").write_text(new, encoding="utf-8")
        digest = feeds(folder, *RUN)
        check = feeds(folder, "check")
        times[name] = {"add": add, "digest": digest, "check": check}
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", default="1000,3000", help="comma-separated numbers of topics")
    ap.add_argument("--papers", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--small", action="store_true", help="100 topics, 500 papers")
    args = ap.parse_args()
    counts = [100] if args.small else [int(n) for n in args.topics.split(",")]
    papers = 500 if args.small else args.papers
    work = Path(tempfile.mkdtemp(prefix="paperfeeds-like-topics-"))
    print(f"{papers:,} papers; topics by example beside topics of terms")
    try:
        for n in counts:
            t = measure(work, n, papers, args.seed)
            for step, said in (("add", "adding the topics"), ("digest", "a new 1-paper digest"),
                               ("check", "feeds check")):  # fmt: skip
                a, b = t["like"][step], t["terms"][step]
                print(f"{n:>6,} topics, {said:21}: like {a:7.2f} s   terms {b:7.2f} s"
                      f"   -> x{a / b:.2f} the term topics")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
