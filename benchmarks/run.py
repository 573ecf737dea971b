"""Measure paperfeeds at scale; every number is printed next to a baseline measured in the
same run on the same machine, so the ratios mean something anywhere.

    python benchmarks/run.py --papers 100000 --topics 1000 [--naive-papers 300] [--keep DIR]
    python benchmarks/run.py --papers 20000 --phases parse,match    # no full build

Phases (each in its own process where start-up or peak memory matters):
  parse      digest files -> papers            baseline: decoding and splitting the same bytes
  match      papers x topics                  baselines: the naive matcher (one regex per term
                                               per topic per paper) and the floor (lowercasing
                                               the fields the matcher reads and one multi-pattern
                                               scan of them that finds nothing); also the floor
                                               as first measured (NFKC folding of title and
                                               summary, a scan of each)
  full       `feeds run` over everything       baseline: the file system creating as many files
                                               of the same sizes by temp file + rename
             and against the naive build with search (naive.py: feedgen, Jinja, Pagefind)
  increment  `feeds run` with one new 10-paper digest, wall time with start-up
  no-op      `feeds run` with nothing new,     baseline: `python -c pass`
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generate import write_digests, write_topics  # noqa: E402
from feeds.config import Criteria, load_subscriptions  # noqa: E402
from feeds.match.fast import Matcher  # noqa: E402
from feeds.match.reference import TopicMatcher, match_papers  # noqa: E402
from feeds.match.terms import normalize  # noqa: E402
from feeds.model import Paper  # noqa: E402
from feeds.sources.digest import parse  # noqa: E402

PHASES = ("parse", "match", "full")
INCREMENTS = 5  # new digests, one run each, after the full build

# The fields of a paper that topics look in, as the matcher puts them together.
RAW_FIELDS: dict[str, Callable[[Paper], str]] = {
    "title": lambda p: p.title + " ; " + (p.title_zh or ""),
    "summary": lambda p: p.summary or "",
    "authors": lambda p: " ; ".join(p.authors),
    "institutions": lambda p: " ; ".join(
        i.name + (f" ; {i.name_zh}" if i.name_zh else "") for i in p.institutions
    ),
    "comments": lambda p: " ; ".join(x for x in (p.comments, p.journal_ref) if x),
    "venue": lambda p: p.venue or "",
}


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}/s"


def timed(fn, *args):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


@dataclass(frozen=True)
class Ran:
    """What a measured `feeds run` reported (see child.py)."""

    wall: float  # seconds
    peak: str = ""  # its peak memory, "N MB" (with its helper's)
    writing: float = 0.0  # seconds spent writing files
    waited: float = 0.0  # seconds the run waited for the writing
    cpu: float = 0.0  # processor seconds (user + system), its child processes included
    pagefind_cpu: float = 0.0  # of which Pagefind's processes'


def _settle() -> None:
    """Write what earlier runs left in memory to disk, untimed: `feeds run` ends with a
    sync, which would otherwise also wait for the writes of the build timed before it
    (the naive build's half a gigabyte does not sync)."""
    os.sync()


def _children_cpu() -> float:
    """Processor seconds (user + system) of this process's children waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def feeds_run(
    work: Path, *, measured: bool = True, replaced: Path | None = None, args: tuple[str, ...] = ()
) -> Ran:
    """Run `feeds run` in a child process. `measured` runs it through benchmarks/child.py,
    which reports what it spent; otherwise the child is the plain command (for start-up
    timings) and only the wall time is known. A measured run lists the files it put in
    place in `replaced`, when given."""
    env = dict(os.environ)
    if replaced is not None:
        replaced.unlink(missing_ok=True)
        env["BENCH_REPLACED"] = str(replaced)
    if measured:
        cmd = [sys.executable, str(ROOT / "benchmarks" / "child.py")]
    else:
        cmd = [sys.executable, "-m", "feeds"]
    cmd += ["run", "--offline", "--quiet", "--json", "--inbox", "inbox", *args]
    _settle()
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu  # the run's, its helper's and its Pagefind's: all waited for
    err = proc.stderr.decode()
    if proc.returncode not in (0, 3):
        sys.exit(f"feeds run failed ({proc.returncode}):\n{err}")
    if not measured:
        return Ran(wall)

    # `key value` lines; the helper processes of a big match and a big publish report too
    # (as helper-...), when they ran: one after the other, so their largest peak counts.
    values: dict[str, list[float]] = {}
    for line in err.splitlines():
        key, _, value = line.partition(" ")
        if key.endswith(("-seconds", "-kb")):
            values.setdefault(key, []).append(float(value))

    def reported(key: str) -> float:
        found = values.get(key, [0.0])
        return max(found) if key.endswith("peak-kb") else sum(found)

    # The run's peak and its helpers', added: an upper bound of what they held at once.
    peak = f"{int(reported('peak-kb') + reported('helper-peak-kb')) // 1024} MB"
    if reported("helper-peak-kb"):
        peak += (f" (the run {int(reported('peak-kb')) // 1024} MB + its helper process "
                 f"{int(reported('helper-peak-kb')) // 1024} MB)")  # fmt: skip
    writing = reported("write-seconds") + reported("helper-write-seconds")
    return Ran(wall, peak, writing, reported("wait-seconds"), cpu,
               reported("pagefind-cpu-seconds"))  # fmt: skip


def file_clock(folder: Path) -> float:
    """Return the time now as the file system stamps files (a marker file's modification
    time): what a published file's time is compared with, whatever the process's clock."""
    marker = folder / ".clock"
    marker.write_bytes(b"")
    began = marker.stat().st_mtime
    marker.unlink()
    return began


def fs_floor(sizes: list[int], folder: Path) -> float:
    """Seconds to create files of these sizes by temp file + rename (no fsync), as we do;
    over files of the same names, when `folder` already holds them."""
    folder.mkdir(parents=True, exist_ok=True)
    # What was written before (the build, or the files to be replaced) out first: the run
    # timed against this floor too started with nothing to write back.
    os.sync()
    start = time.perf_counter()
    for i, size in enumerate(sizes):
        tmp = folder / f".f{i}.tmp"
        with open(tmp, "wb") as f:
            f.write(b"x" * size)
        os.replace(tmp, folder / f"f{i}.html")
    os.sync()
    return time.perf_counter() - start


def rewrite_floor(paths: list[Path], folder: Path) -> float:
    """Seconds to replace files of these files' sizes by temp file + rename, and sync: what
    re-writing them costs the file system alone (it frees each old file's blocks too).
    The files to replace are made first, untimed, in `folder`."""
    sizes = [p.stat().st_size for p in paths]
    folder.mkdir(parents=True)
    for i, size in enumerate(sizes):
        (folder / f"f{i}.html").write_bytes(b"y" * size)
    return fs_floor(sizes, folder)


# The libraries a run imports whatever our code does: a no-op run's (the command line, the
# state, the standard library's dataclasses and paths), and those of a run that matches
# and publishes (the automaton, the templates, feedgen: the issue names it as the feed
# writer). Their import time is a floor of the run's start-up.
NOOP_LIBRARIES = "click, sqlite3, dataclasses, pathlib, json, datetime"
RUN_LIBRARIES = NOOP_LIBRARIES + ", ahocorasick, jinja2, feedgen.feed"


def bare_parse(blobs: list[tuple[str, bytes]]) -> tuple[int, float]:
    """(papers, seconds) for the least a parser of this format does in CPython: decode
    each file, find each record with one match of the parser's own expression for a
    record, hash its title (SHA-1, as paper ids are) and make its Paper. No splitting of
    authors or institutions, no normalized title, no checks: a floor, not a parser."""
    import hashlib

    from feeds.sources import digest

    record, head, sha1 = digest._RECORD.match, digest._HEAD.match, hashlib.sha1
    papers = 0
    start = time.perf_counter()
    for _name, blob in blobs:
        text = blob.decode("utf-8")
        venue = head(text)
        pos = venue.end() if venue else 0
        while m := record(text, pos):
            title, title_zh, names, authors, _inst, summary, comments, journal_ref = m.groups()
            Paper(
                sha1(title.encode()).hexdigest()[:16],
                title,
                title_zh,
                (names or authors,),
                (),
                summary,
                comments,
                journal_ref,
                venue and venue["venue"],
            )
            papers += 1
            pos = m.end()
    return papers, time.perf_counter() - start


def store_floor(papers: list[Paper], folder: Path) -> float:
    """Seconds to store these papers' fields as rows of a fresh SQLite table keyed by paper
    id, in one transaction: the least a run does to keep what it parsed. (Per row, a sample
    is a low estimate of a big table: its index outgrows the page cache.)"""
    import sqlite3

    folder.mkdir(parents=True)
    db = sqlite3.connect(folder / "floor.sqlite")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE papers (seq INTEGER PRIMARY KEY, paper_id TEXT UNIQUE, a, b, c, d)")
    rows = [
        (
            f"{i:016x}",  # a sample repeats no paper, but its ids must be unique anyway
            p.title + (p.title_zh or ""),
            "; ".join(p.authors),
            "; ".join(i.name for i in p.institutions),
            (p.summary or "") + (p.comments or "") + (p.journal_ref or "") + (p.venue or ""),
        )
        for i, p in enumerate(papers)
    ]
    start = time.perf_counter()
    with db:
        db.executemany("INSERT INTO papers (paper_id, a, b, c, d) VALUES (?, ?, ?, ?, ?)", rows)
    seconds = time.perf_counter() - start
    db.close()
    shutil.rmtree(folder)
    return seconds


def match_phase(
    args: argparse.Namespace, pairs: list[tuple[str, Criteria]], papers: list[Paper]
) -> float:
    """Print the match rates; return the floor's seconds a paper."""
    terms = sum(len(c.any) + sum(map(len, c.all)) + len(c.none) for _t, c in pairs)
    sample = random.Random(1).sample(papers, min(args.match_papers, len(papers)))
    matcher, build_s = timed(Matcher, pairs)
    start = time.perf_counter()
    hits = sum(len(matcher.match(p)) for p in sample)
    fast_s = time.perf_counter() - start
    naive = sample[: args.naive_papers]
    slow_matchers = [(tid, TopicMatcher(c)) for tid, c in pairs]
    start = time.perf_counter()
    naive_hits = sum(1 for _ in match_papers(slow_matchers, naive))
    naive_s = time.perf_counter() - start
    floor_rate = len(sample) / scan_floor(pairs, sample)
    before_rate = len(sample) / fold_floor(terms, sample)
    fast_rate = len(sample) / fast_s
    naive_rate = len(naive) / naive_s
    print(f"\nmatch:  {args.topics} topics, {terms:,} terms; automaton built in {build_s:.2f}s")
    print(f"  fast   {fast_rate:>10,.0f} papers/s ({hits / len(sample):.1f} topic hits/paper)")
    print(f"  naive  {naive_rate:>10,.0f} papers/s ({naive_hits / len(naive):.1f} hits/paper)"
          f"  -> fast is x{fast_rate / naive_rate:,.0f} the naive matcher")  # fmt: skip
    print(f"  floor  {floor_rate:>10,.0f} papers/s"
          f"  -> fast is {floor_rate / fast_rate:.1f}x slower than the floor")  # fmt: skip
    print(f"  floor as measured before {before_rate:>10,.0f} papers/s"
          f"  -> fast is {before_rate / fast_rate:.1f}x slower")  # fmt: skip
    del sample, naive, matcher, slow_matchers
    return 1 / floor_rate


def scan_floor(pairs: list[tuple[str, Criteria]], sample: list[Paper]) -> float:
    """Seconds to lowercase the fields the matcher reads and scan them once, all together,
    with an automaton of the topics' terms made unfindable (each with a NUL after it)."""
    import ahocorasick

    terms = {t for _t, c in pairs for t in (*c.any, *(t for g in c.all for t in g), *c.none)}
    nothing = ahocorasick.Automaton()
    for i, term in enumerate(terms):
        nothing.add_word(term.lower().rstrip("*") + "\x00", i)
    nothing.make_automaton()
    names = {n for _t, c in pairs if c.any or c.all or c.none for n in c.fields}
    if any(c.institutions for _t, c in pairs):
        names.add("institutions")
    raw = [get for name, get in RAW_FIELDS.items() if name in names]
    start = time.perf_counter()
    for p in sample:
        for _ in nothing.iter("\n".join([get(p) for get in raw]).lower()):
            pass
    return time.perf_counter() - start


def fold_floor(terms: int, sample: list[Paper]) -> float:
    """Seconds for the floor as first measured: NFKC folding of the title and the summary
    (by normalize, which got faster since), each scanned by an automaton of keys that
    share no prefix with any text."""
    import ahocorasick

    nothing = ahocorasick.Automaton()
    for i in range(terms):
        nothing.add_word(f"\x00{i}\x00", i)  # terms that occur nowhere
    nothing.make_automaton()
    start = time.perf_counter()
    for p in sample:
        for text in (p.title + " " + (p.title_zh or ""), p.summary or ""):
            for _ in nothing.iter(normalize(text)):
                pass
    return time.perf_counter() - start


@dataclass(frozen=True)
class Naive:
    """What the naive build with search took (naive.py)."""

    wall: float  # seconds
    steps: str  # its steps' times in words
    cpu: float  # processor seconds (user + system), Pagefind's included
    pagefind_cpu: float  # of which Pagefind's


def naive_build(work: Path, out: str = "naive") -> Naive:
    """Run the naive build with search (naive.py) in a child process into work/out."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "naive.py")]
    cmd += ["inbox", "config/subscriptions.yaml", out]
    _settle()
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu
    if proc.returncode != 0:
        sys.exit(f"the naive build failed ({proc.returncode}):\n{proc.stderr}")
    pagefind = next(float(line.split()[1]) for line in proc.stderr.splitlines()
                    if line.startswith("naive-pagefind-cpu-seconds "))  # fmt: skip
    return Naive(wall, proc.stdout.strip(), cpu, pagefind)


def full_phase(
    work: Path, inbox: Path, floors: dict[str, float], *, new_papers: int, naive: bool,
    rounds: int = 1,
) -> None:  # fmt: skip
    """Time a full build, new digests and no-op runs. `floors`: the floors of the build's
    steps measured before (what, seconds for all the papers), added up as its floor.
    `naive`: time the naive build with search first, as the build's baseline. `rounds`:
    how many times the naive build and the full build are timed, one after the other (each
    into folders of its own): the ratio is of their medians. The last round's build is the
    one described, and the one the new digests go into."""
    # As an installed package would be: compiled once (this environment may not write
    # bytecode itself, and compiling on every start is not what a user pays).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "feeds")], check=True)
    pairs: list[tuple[Naive | None, Ran]] = []
    for r in range(1, rounds):  # each into folders of its own, removed after all timings
        earlier = naive_build(work, f"naive-{r}") if naive else None
        state = f"round-{r}/state.sqlite3"
        pairs.append(
            (earlier, feeds_run(work, args=("--public", f"round-{r}/public", "--state", state)))
        )
    baseline = naive_build(work) if naive else None
    began = file_clock(work)  # the files' modification times say when each was in place
    built = feeds_run(work)
    pairs.append((baseline, built))
    wall, peak, writing, waited = built.wall, built.peak, built.writing, built.waited
    public = work / "public"
    feeds_at = max(p.stat().st_mtime for p in (public / "feeds").iterdir()) - began
    index = public / "search" / "index.json"
    search_at = index.stat().st_mtime - began if index.exists() else float("nan")
    sizes = [p.stat().st_size for p in public.rglob("*") if p.is_file()]
    floor_w = fs_floor(sizes, work / "fs-floor")
    print(f"\nfull build: {wall:.1f}s wall, peak {peak}, {len(sizes):,} files "
          f"({sum(sizes) / 1e6:,.0f} MB)")  # fmt: skip
    # Files are written on a second thread while the next ones render: what writing costs
    # the run is the time it waited for it, not the writer's own time.
    print(f"  everything but writing: {wall - waited:.1f}s (the wall time but the "
          f"{waited:.1f}s it waited for the writer)")  # fmt: skip
    print(f"  readers get the feeds after {feeds_at:.1f}s (the last feed in place) and "
          f"search after {search_at:.1f}s (search/index.json switched)")  # fmt: skip
    if floors:
        parts = " + ".join(f"{what} {seconds:.1f}s" for what, seconds in floors.items())
        print(f"    its floor: {sum(floors.values()):.1f}s = {parts}, rendering not counted")
    print(f"  writing files:          {writing:.1f}s "
          f"({writing / len(sizes) * 1e6:.0f} us/file, beside the rendering)")  # fmt: skip
    per_file = floor_w / len(sizes) * 1e6
    print(f"  file-system floor:      {floor_w:.1f}s ({per_file:.0f} us/file, same sizes, "
          f"temp file + rename): writing is x{writing / floor_w:.2f} the floor")  # fmt: skip
    outside = built.cpu - built.pagefind_cpu
    print(f"  processor time: {built.cpu:.1f}s (user + system, its helper and Pagefind "
          f"included), of which Pagefind {built.pagefind_cpu:.1f}s; outside Pagefind "
          f"{outside:.1f}s")  # fmt: skip
    if baseline is not None:
        print(f"  the naive build with search: {baseline.wall:.1f}s ({baseline.steps})")
        print(f"  against the naive build with search: x{baseline.wall / wall:.2f} "
              "(its time over feeds run's)")  # fmt: skip
        naive_outside = baseline.cpu - baseline.pagefind_cpu
        ratio = outside / naive_outside
        print(f"  processor time outside Pagefind against the naive's: x{ratio:.2f}"
              f" ({outside:.1f}s against {naive_outside:.1f}s; the naive's Pagefind "
              f"{baseline.pagefind_cpu:.1f}s, all of it {baseline.cpu:.1f}s)")  # fmt: skip
    if baseline is not None and rounds > 1:
        naives = [n.wall for n, _b in pairs if n is not None]
        builds = [b.wall for _n, b in pairs]
        outs = [b.cpu - b.pagefind_cpu for _n, b in pairs]
        naive_outs = [n.cpu - n.pagefind_cpu for n, _b in pairs if n is not None]
        print(f"  {rounds} rounds, each the naive build then feeds run: naive "
              f"{', '.join(f'{x:.1f}' for x in naives)} s; feeds run "
              f"{', '.join(f'{x:.1f}' for x in builds)} s")  # fmt: skip
        print(f"  medians: the first build against the naive build with search "
              f"x{statistics.median(naives) / statistics.median(builds):.2f}; processor "
              f"time outside Pagefind against the naive's "
              f"x{statistics.median(outs) / statistics.median(naive_outs):.2f}")  # fmt: skip

    # incremental and no-op. One new digest after another, each run timed: a single run
    # cannot tell a tenth apart on a shared machine, whose speed drifts within minutes.
    incs, inc_peaks, rewrites, rewritten = [], [], [], []
    for n in range(INCREMENTS):
        write_digests(work / "new", new_papers, new_papers, 99 + n)
        for f in sorted((work / "new").glob("*.txt")):
            shutil.move(f, inbox / f"zz-new-{n}-{f.name}")
        listed = work / "replaced.txt"
        # measured: start-up counts, hooks ~1 ms
        ran = feeds_run(work, replaced=listed)
        inc, inc_peak = ran.wall, ran.peak
        incs.append(inc)
        inc_peaks.append(inc_peak)
        paths = [work / line for line in listed.read_text().splitlines()]
        rewrites.append(rewrite_floor(paths, work / "rewrite-floor" / str(n)))
        rewritten.append(sum(p.stat().st_size for p in paths) / 1e6)
    noop_peak = feeds_run(work).peak
    # Each no-op run next to a `python -c pass`, so that both see the same machine: a shared
    # one's start-up time drifts by a third within the hour.
    noops, passes = [], []
    noop_libs, run_libs = [], []
    for _ in range(11):
        noops.append(feeds_run(work, measured=False).wall)
        passes.append(_wall([sys.executable, "-c", "pass"]))
        noop_libs.append(_wall([sys.executable, "-c", f"import {NOOP_LIBRARIES}"]))
        run_libs.append(_wall([sys.executable, "-c", f"import {RUN_LIBRARIES}"]))
    noop, python_s = statistics.median(noops), statistics.median(passes)
    import_s = statistics.median(
        _wall([sys.executable, "-c", "import feeds.cli"]) for _ in range(5)
    )
    inc = statistics.median(incs)
    print(f"\nnew {new_papers}-paper digest: {inc * 1000:.0f} ms wall, median of {len(incs)} "
          f"({min(incs) * 1000:.0f}–{max(incs) * 1000:.0f} ms; peak "
          f"{max(inc_peaks, key=lambda p: int(p.split()[0]))}); "
          f"{inc / wall:.1%} of the full build")  # fmt: skip
    files = len(paths)
    print(f"  floors: importing the libraries it uses ({RUN_LIBRARIES}) "
          f"{statistics.median(run_libs) * 1000:.0f} ms; the file system replacing as many "
          f"files of the same sizes as it put in place (the last run: {files:,} files, "
          f"{rewritten[-1]:.1f} MB) by temp file + rename, and the sync, "
          f"{statistics.median(rewrites) * 1000:.0f} ms, median of {len(rewrites)}")  # fmt: skip
    print(f"no-op run:           {noop * 1000:.0f} ms wall, median of 11 "
          f"(fastest {min(noops) * 1000:.0f} ms; peak {noop_peak}); "
          f"{noop / wall:.1%} of the full build")  # fmt: skip
    print(f"  baselines: `python -c pass` {python_s * 1000:.0f} ms (run between the no-op runs: "
          f"they take {(noop - python_s) * 1000:.0f} ms more), "
          f"`import feeds.cli` {import_s * 1000:.0f} ms, importing the libraries a no-op "
          f"needs ({NOOP_LIBRARIES}) {statistics.median(noop_libs) * 1000:.0f} ms")  # fmt: skip
    # Only now: deleting as many files as the build wrote keeps the file system busy for a
    # while (discards), which would slow the runs timed above.
    shutil.rmtree(work / "fs-floor")
    shutil.rmtree(work / "rewrite-floor")
    shutil.rmtree(work / "naive", ignore_errors=True)
    for r in range(1, rounds):
        shutil.rmtree(work / f"naive-{r}", ignore_errors=True)
        shutil.rmtree(work / f"round-{r}", ignore_errors=True)


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=100_000)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--naive-papers", type=int, default=300, help="papers for the naive matcher")
    ap.add_argument("--match-papers", type=int, default=50_000, help="papers for match rates")
    ap.add_argument(
        "--new-papers", type=int, default=10, help="papers in each new digest after the build"
    )
    ap.add_argument(
        "--no-naive", action="store_true", help="skip the naive build with search (baseline)"
    )
    ap.add_argument("--keep", type=Path, help="work folder to keep (default: a temp folder)")
    ap.add_argument(
        "--rounds", type=int, default=3,
        help="times the naive build and the full build are timed, one after the other "
        "(the ratio of their medians is printed; default 3)",
    )  # fmt: skip
    ap.add_argument(
        "--broad",
        action="store_true",
        help="topics from the seeds' vocabulary (each matches ~20%% of papers) instead of "
        "narrow ones with realistic hit rates",
    )
    ap.add_argument(
        "--phases",
        default=",".join(PHASES),
        help=f"comma-separated phases to run, of {','.join(PHASES)} (default: all; "
        "'full' includes the incremental and no-op runs; 'match' parses first)",
    )
    args = ap.parse_args()
    phases = set(args.phases.split(","))
    if not phases <= set(PHASES):
        ap.error(f"--phases: unknown {', '.join(sorted(phases - set(PHASES)))}")

    work = args.keep or Path(tempfile.mkdtemp(prefix="paperfeeds-bench-"))
    inbox, config = work / "inbox", work / "config"
    for d in (inbox, config, work / "naive"):
        shutil.rmtree(d, ignore_errors=True)
    config.mkdir(parents=True)
    shutil.rmtree(work / "public", ignore_errors=True)
    shutil.rmtree(work / ".paperfeeds", ignore_errors=True)
    kind = "broad" if args.broad else "narrow"
    print(f"paperfeeds benchmark: {args.papers:,} papers, {args.topics:,} {kind} topics, in {work}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")

    _, gen = timed(write_digests, inbox, args.papers, 500, 1)
    write_topics(config / "subscriptions.yaml", args.topics, 1, narrow=not args.broad)
    files = sorted(inbox.glob("*.txt"))
    print(f"generated {len(files)} digests in {gen:.1f}s")

    # -- parse ---------------------------------------------------------------------------
    floors: dict[str, float] = {}  # of a full build: what, seconds for all the papers
    blobs = [(f.name, f.read_bytes()) for f in files]
    # Papers are parsed and dropped, as a run streams them; every step-th is kept for the
    # match phase. (Keeping a million would time the garbage collector walking them all.)
    step = max(1, args.papers // args.match_papers)
    start = time.perf_counter()
    papers: list[Paper] = []
    parsed = 0
    for name, blob in blobs:
        for _line, paper in parse(blob, name).papers:
            if parsed % step == 0:
                papers.append(paper)
            parsed += 1
    parse_s = time.perf_counter() - start
    start = time.perf_counter()
    lines = sum(len(blob.decode("utf-8").split("\n")) for _name, blob in blobs)
    floor_s = time.perf_counter() - start
    if "parse" in phases:
        bare, bare_s = bare_parse(blobs)
        floors["parsing at the bare-parse rate"] = bare_s * parsed / bare
        print(f"\nparse:  {rate(parsed, parse_s)} papers "
              f"({parse_s:.2f}s; floor decode+split {floor_s:.2f}s, {lines:,} lines: "
              f"x{parse_s / floor_s:.1f} the floor)")  # fmt: skip
        print(f"  bare parse {rate(bare, bare_s)} papers ({bare:,} papers in {bare_s:.2f}s: "
              "decoding, one match per record, its title's SHA-1 and a Paper; "
              f"parsing is x{parse_s / bare_s * bare / parsed:.1f} that)")  # fmt: skip
    del blobs

    if "match" in phases:
        topics = load_subscriptions(config / "subscriptions.yaml")
        per_paper = match_phase(args, [(t.id, t.criteria) for t in topics], papers)
        floors["matching at the match floor"] = per_paper * parsed
    if "full" in phases:
        sample = papers[: args.match_papers]
        seconds = store_floor(sample, work / "store-floor") * parsed / len(sample)
        floors[f"storing the rows in SQLite ({len(sample):,} rows, scaled)"] = seconds
    del papers

    if "full" in phases:
        full_phase(work, inbox, floors, new_papers=args.new_papers, naive=not args.no_naive,
                   rounds=max(1, args.rounds))  # fmt: skip
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
