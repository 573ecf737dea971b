"""`feeds watch` as a real process: publishes at once, reads only settled files, ignores the
names producers write to, shares the state with `feeds run`, survives a failing cycle and
exits 0 on SIGTERM / SIGINT."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from feeds.pipeline import run
from feeds.sources.digest import parse
from tests.conftest import ROOT, Workspace, make_workspace, run_feeds, slow_feeds

SEEDS = sorted((ROOT / "seeds").glob("*.txt"))
SETTINGS = "schedule:\n  every: 1s\nsettle: 1s\n"
TIMEOUT = 20.0


def seed_ids(seed: Path) -> set[str]:
    """Return the paper ids of a seed digest."""
    return {paper.paper_id for _line, paper in parse(seed.read_bytes(), seed.name).papers}


def feed_ids(public: Path) -> list[str] | None:
    """Return the paper ids in public/feeds/all.json (None before the first publish).

    The file must always parse: writes are atomic, so a reader never sees half a feed.
    """
    path = public / "feeds" / "all.json"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    doc = json.loads(data)
    return [item["_paperfeeds"]["paper_id"] for item in doc["items"]]


def wait_for(what: str, check: Callable[[], Any], timeout: float = TIMEOUT) -> Any:
    """Poll check() until it returns something truthy; fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


@dataclass
class Watcher:
    """A running `feeds watch` and where its output goes."""

    ws: Workspace
    proc: subprocess.Popen[str]
    out: Path
    err: Path

    def log(self) -> str:
        return self.out.read_text() + self.err.read_text()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def published(self) -> bool:
        assert self.alive(), f"watch exited with {self.proc.returncode}:\n{self.log()}"
        return (self.ws.public / "index.html").is_file()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = TIMEOUT) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"watch did not exit {timeout:.0f}s after {signal.Signals(sig).name}")


def empty_workspace(root: Path) -> Workspace:
    """A workspace whose inbox starts empty, with a settings file for a fast schedule."""
    ws = make_workspace(root)
    for path in ws.inbox.iterdir():
        path.unlink()
    (root / "config" / "settings.yaml").write_text(SETTINGS)
    return ws


def watch_command(ws: Workspace) -> list[str]:
    return [
        "watch", "--inbox", str(ws.inbox), "--public", str(ws.public), "--state", str(ws.state),
        "--subscriptions", str(ws.subscriptions),
        "--settings", str(ws.root / "config" / "settings.yaml"), "--offline",
    ]  # fmt: skip


@pytest.fixture
def start_watch(tmp_path: Path) -> Iterator[Callable[..., Watcher]]:
    """Start `feeds watch` processes; whatever is still running at teardown is killed."""
    started: list[Watcher] = []

    def start(ws: Workspace, prefix: list[str] | None = None) -> Watcher:
        n = len(started)
        out, err = tmp_path / f"watch{n}.out", tmp_path / f"watch{n}.err"
        with out.open("w") as o, err.open("w") as e:
            proc = subprocess.Popen(
                [sys.executable, *(prefix or ["-m", "feeds"]), *watch_command(ws)],
                cwd=ws.root,
                stdout=o,
                stderr=e,
                text=True,
            )
        w = Watcher(ws, proc, out, err)
        started.append(w)
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait(timeout=10)


def status(ws: Workspace) -> dict[str, Any]:
    r = run_feeds(ws.root, "status", "--json", *ws.cli_args())
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_publishes_at_once_and_a_signal_ends_it_with_status_0(
    tmp_path: Path, start_watch: Callable[..., Watcher], sig: int
) -> None:
    ws = empty_workspace(tmp_path / "ws")
    w = start_watch(ws)
    wait_for("public/index.html", w.published)
    assert feed_ids(ws.public) == []
    begun = time.monotonic()
    assert w.stop(sig) == 0, w.log()
    assert time.monotonic() - begun < 10
    assert "Traceback" not in w.log()


def test_a_digest_written_in_steps_is_published_whole(
    tmp_path: Path, start_watch: Callable[..., Watcher]
) -> None:
    ws = empty_workspace(tmp_path / "ws")
    seed = SEEDS[0]
    ids = seed_ids(seed)
    assert len(ids) == 30
    w = start_watch(ws)
    wait_for("the first publish", w.published)

    seen: list[set[str]] = []  # the digest's papers in each look at all.json
    done = threading.Event()

    def observe() -> None:
        while not done.is_set():
            seen.append(set(feed_ids(ws.public) or ()) & ids)
            time.sleep(0.02)

    observer = threading.Thread(target=observe, daemon=True)
    observer.start()
    try:
        data = seed.read_bytes()
        target = ws.inbox / "digest.txt"
        # Three writes 0.3 s apart: the file keeps changing for longer than a schedule tick,
        # but never stays unchanged for `settle` until it is complete.
        cuts = [0, len(data) // 2, len(data) * 3 // 4, len(data)]
        for n, (start, end) in enumerate(itertools.pairwise(cuts)):
            if n:
                time.sleep(0.3)
            with target.open("ab") as f:
                f.write(data[start:end])
        wait_for("the digest's papers in all.json", lambda: seen and seen[-1])
    finally:
        done.set()
        observer.join(timeout=5)
    partial = [len(s) for s in seen if s and s != ids]
    assert not partial, f"all.json held part of the digest: {sorted(set(partial))} papers"
    assert seen[-1] == ids
    report = status(ws)
    assert (report["digests"], report["rejected"], report["papers"]) == (1, 0, 30)
    assert report["skipped_records"] == []
    assert w.stop() == 0, w.log()


def test_names_being_written_are_ignored_until_renamed(
    tmp_path: Path, start_watch: Callable[..., Watcher]
) -> None:
    ws = empty_workspace(tmp_path / "ws")
    w = start_watch(ws)
    wait_for("the first publish", w.published)
    first, second = SEEDS
    part = ws.inbox / "x.txt.part"
    shutil.copyfile(first, part)
    for name in (".y.txt", "y.txt.tmp", "y.txt~"):  # the other names producers write to
        shutil.copyfile(second, ws.inbox / name)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:  # three schedule ticks: nothing is read
        assert feed_ids(ws.public) == [], w.log()
        assert w.alive(), w.log()
        time.sleep(0.1)
    assert "rejected:" not in w.log()
    assert "x.txt.part" not in w.log()  # not even "still being written": never looked at

    part.rename(ws.inbox / "x.txt")
    got = wait_for("papers from x.txt", lambda: feed_ids(ws.public))
    assert set(got) == seed_ids(first)
    report = status(ws)
    assert (report["digests"], report["rejected"], report["papers"]) == (1, 0, 30)
    assert w.stop() == 0, w.log()


def test_a_concurrent_run_neither_corrupts_nor_duplicates(
    tmp_path: Path, start_watch: Callable[..., Watcher]
) -> None:
    ws = empty_workspace(tmp_path / "ws")
    w = start_watch(ws)
    wait_for("the first publish", w.published)
    # Both digests appear at once, already settled (old mtimes), so the watch's next tick
    # and the runs started now all want to ingest and publish them.
    staging = tmp_path / "staging"
    staging.mkdir()
    for seed in SEEDS:
        shutil.copy2(seed, staging / seed.name)
        os.replace(staging / seed.name, ws.inbox / seed.name)
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "feeds", "run", *ws.cli_args()],
            cwd=ws.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        results = [p.communicate(timeout=60) for p in runs]
    finally:
        for p in runs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
    for p, (out, err) in zip(runs, results, strict=True):
        refused = p.returncode == 1 and "another paperfeeds process" in err
        assert p.returncode == 0 or refused, f"run exited {p.returncode}:\n{out}\n{err}"
    got = wait_for("60 papers in all.json", lambda: len(feed_ids(ws.public) or ()) >= 60)
    time.sleep(1.1)  # one more tick of the watch must not change that
    got = feed_ids(ws.public)
    assert got is not None
    assert len(got) == 60, f"{len(got)} items"
    assert len(set(got)) == 60
    assert set(got) == seed_ids(SEEDS[0]) | seed_ids(SEEDS[1])
    report = status(ws)
    assert (report["digests"], report["rejected"], report["papers"]) == (2, 0, 60)
    assert len(list((ws.public / "papers").glob("*.html"))) == 60
    assert w.stop() == 0, w.log()


def test_sigterm_lets_the_current_cycle_finish(
    tmp_path: Path, start_watch: Callable[..., Watcher]
) -> None:
    ws = empty_workspace(tmp_path / "ws")
    for seed in SEEDS:
        shutil.copy2(seed, ws.inbox / seed.name)
    script = slow_feeds(tmp_path, 0.02)
    w = start_watch(ws, prefix=[str(script)])
    papers = ws.public / "papers"
    wait_for("publishing under way", lambda: len(list(papers.glob("*.html"))) >= 5)
    assert w.stop() == 0, w.log()
    # The cycle that was publishing finished before the process exited.
    assert len(list(papers.glob("*.html"))) == 60
    assert len(feed_ids(ws.public) or ()) == 60
    assert not [p for p in ws.public.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_to_every_process_lets_a_helped_cycle_finish(tmp_path: Path, sig: int) -> None:
    """As `systemctl stop` (SIGTERM) or a terminal that closes (SIGHUP) does: the signal to
    the watch and its helper process at once."""
    ws = empty_workspace(tmp_path / "ws")
    for seed in SEEDS:
        shutil.copy2(seed, ws.inbox / seed.name)
    script = slow_feeds(tmp_path, 0.02, helped=True)
    log = tmp_path / "watch.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(script), *watch_command(ws)],
            cwd=ws.root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        papers = ws.public / "papers"
        wait_for("publishing under way", lambda: len(list(papers.glob("*.html"))) >= 5)
        assert Path(f"{script}.helper-started").exists()
        os.killpg(proc.pid, sig)
        assert proc.wait(timeout=TIMEOUT) == 0, log.read_text()
    finally:
        proc.kill()
        proc.wait()
    assert "Traceback" not in log.read_text()
    # The cycle that was publishing finished, both processes' parts, and nothing is left
    # running in the group.
    assert len(list(papers.glob("*.html"))) == 60
    assert len(feed_ids(ws.public) or ()) == 60
    assert not [p for p in ws.public.rglob("*") if p.name.endswith(".tmp")]
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)


def test_a_failing_cycle_is_logged_and_the_next_one_runs(
    tmp_path: Path, start_watch: Callable[..., Watcher]
) -> None:
    ws = empty_workspace(tmp_path / "ws")
    shutil.copy2(SEEDS[0], ws.inbox / SEEDS[0].name)
    ws.public.write_text("not a folder\n")  # publishing raises in every cycle
    w = start_watch(ws)
    # It fails, and fails again on the next tick: the process keeps running.
    wait_for("two failed cycles in the log", lambda: w.log().count("cycle failed") >= 2)
    assert w.alive(), w.log()
    # Said plainly, with the file: not a traceback.
    assert f"cycle failed: cannot write {ws.public}/" in w.log()
    assert "Traceback" not in w.log()

    ws.public.unlink()  # the cause removed: the next cycle publishes
    got = wait_for("papers in all.json", lambda: w.published() and feed_ids(ws.public))
    # The digest was ingested by a failed cycle; the later publish still has all of it.
    assert set(got) == seed_ids(SEEDS[0])
    assert len(list((ws.public / "papers").glob("*.html"))) == 30
    assert w.stop() == 0, w.log()


def test_a_file_is_read_as_soon_as_it_has_settled(tmp_path: Path) -> None:
    """A file unchanged for longer than `settle` is read, whatever the wall clock's fraction
    of a second. (Judging it with a clock truncated to whole seconds defers a settled file
    for up to a second, and `feeds watch` then reschedules the retry at a time already
    past: a tight loop of full cycles until the clock reaches the next second.)"""
    ws = empty_workspace(tmp_path / "ws")
    path = ws.inbox / SEEDS[0].name
    shutil.copyfile(SEEDS[0], path)
    settle = 1.0
    cfg = ws.config()
    while not 0.5 <= time.time() % 1 <= 0.7:  # early enough in a second for what follows
        time.sleep(0.01)
    changed = time.time() - settle - 0.3  # settled 0.3 s ago, within this same second
    os.utime(path, (changed, changed))
    summary = run(cfg, settle=settle, lock_wait=5)
    late = f"{summary.retry_at - time.time():+.2f}s from now" if summary.retry_at else None
    assert summary.deferred == (), f"settled 0.3 s ago, deferred; retry_at {late}"
    assert summary.digests == 1
