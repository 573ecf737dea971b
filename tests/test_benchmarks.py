"""The benchmark script runs end to end on a tiny input and prints every number it promises,
each beside its baseline. (Its numbers are not checked: speed is never a test assertion.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import pagefind_env

ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_prints_every_phase_beside_its_baselines(tmp_path: Path) -> None:
    work = tmp_path / "work"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--keep", str(work)]
    cmd += ["--papers", "300", "--topics", "10", "--match-papers", "200", "--naive-papers", "5"]
    # With Pagefind, as outside the tests: the naive build with search runs it.
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=pagefind_env())
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for line in (
        r"parse: +[\d,]+/s papers .*x[\d.]+ the floor\)",
        r"bare parse [\d,]+/s papers \(300 papers in",
        r"fast +[\d,]+ papers/s",
        r"naive +[\d,]+ papers/s .*-> fast is x[\d,]+ the naive matcher",
        r"floor +[\d,]+ papers/s +-> fast is [\d.]+x slower than the floor",
        r"full build: [\d.]+s wall, peak \d+ MB, [\d,]+ files",
        (
            r"its floor: [\d.]+s = parsing at the bare-parse rate [\d.]+s \+ matching at the "
            r"match floor [\d.]+s \+ storing the rows in SQLite \(200 rows, scaled\) [\d.]+s"
        ),
        r"writing is x[\d.]+ the floor",
        r"readers get the feeds after [\d.]+s \(the last feed in place\) and search after",
        (
            r"the naive build with search: [\d.]+s \(parse and match [\d.]+s \+ feeds [\d.]+s "
            r"\+ reading lists [\d.]+s \+ pages [\d.]+s \+ search \(Pagefind\) [\d.]+s\)"
        ),
        r"against the naive build with search: x[\d.]+ \(its time over feeds run's\)",
        r"new 10-paper digest: \d+ ms wall, median of 5 .*; [\d.]+% of the full build",
        (
            r"floors: importing the libraries it uses \(.*feedgen.feed\) \d+ ms; the file "
            r"system replacing as many files of the same sizes as it put in place \(the last "
            r"run: [1-9]"
        ),
        r"no-op run: +\d+ ms wall, median of 11",
        r"`python -c pass` \d+ ms .* importing the libraries a no-op needs \(.*\) \d+ ms",
    ):
        assert re.search(line, out), f"no line like {line!r} in:\n{out}"
    # The run's state and output are kept; the floors' scratch files are not.
    assert (work / "public" / "feeds.opml").is_file()
    scratch = {"fs-floor", "rewrite-floor", "store-floor", "naive"}
    assert {p.name for p in work.iterdir()}.isdisjoint(scratch)
    # The last new digest's run listed the files it put in place: real files it published.
    replaced = (work / "replaced.txt").read_text().splitlines()
    assert replaced
    assert all((work / p).exists() and "public" in Path(p).parts for p in replaced)


def test_like_benchmark_small_prints_its_ratios() -> None:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "like.py"), "--small"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for line in (
        r"build: .*-> x[\d.]+ the keyword matcher",
        r"score: .*-> x[\d.]+ the keyword matcher",
        r"increment: .*\(ratio x[\d.]+\)",
    ):
        assert re.search(line, proc.stdout), proc.stdout
