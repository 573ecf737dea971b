"""A big publish or match shares its parts with a helper process: the same files, the
same memberships, the same errors.

The seeds are far below the size at which a run takes a helper, so these tests lower the
threshold and cut the papers into parts of seven (60 papers: nine parts), both the pages
to render and the papers to match.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feeds import parallel as helper
from feeds.config import Config
from feeds.errors import PublishError
from feeds.match import step as matching
from feeds.pipeline import RunSummary, run
from feeds.publish import parts
from feeds.publish.view import feed_path
from tests.conftest import ROOT, project_config

T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)


def _project(root: Path) -> Config:
    shutil.copytree(ROOT / "seeds", root / "seeds")
    later = sorted((root / "seeds").glob("*.txt"))[1]
    later.rename(root / later.name)  # held back for a second run
    return project_config(root, ROOT / "config" / "subscriptions.yaml")


def _release(config: Config) -> None:
    root = config.settings.public_dir.parent
    for held in root.glob("*.txt"):
        held.rename(root / "seeds" / held.name)


def _files(public: Path) -> dict[str, bytes]:
    return {str(p.relative_to(public)): p.read_bytes() for p in public.rglob("*") if p.is_file()}


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every publish and match takes a helper; return the list of the parts handed to it
    (a match's are ranges of papers: (first seq, the seq after the last, count))."""
    monkeypatch.setattr(helper, "HELP_FROM", 0)
    monkeypatch.setattr(parts, "PAGES_PER_PART", 7)
    monkeypatch.setattr(matching, "PAPERS_PER_MATCH", 7)
    given: list[object] = []
    send = helper.Helper.send

    def spy(self: helper.Helper[object, object], part: object) -> None:
        given.append(part)
        send(self, part)

    monkeypatch.setattr(helper.Helper, "send", spy)
    return given


Cycle = tuple[RunSummary, RunSummary, dict[str, list[str]], Config, Config]


def _both(tmp_path: Path, handed: list[object], monkeypatch: pytest.MonkeyPatch) -> Iterator[Cycle]:
    """Run the same two cycles in a project alone and in one with a helper; yield after
    each the two summaries and the progress messages."""
    alone, helped = _project(tmp_path / "alone"), _project(tmp_path / "helped")
    for n in range(2):
        if n:
            _release(alone)
            _release(helped)
        now = T0 + timedelta(hours=n)
        told: dict[str, list[str]] = {"alone": [], "helped": []}
        with monkeypatch.context() as m:
            m.setattr(helper, "HELP_FROM", 10**9)
            one = run(alone, now=lambda now=now: now, progress=told["alone"].append)
        handed.clear()
        two = run(helped, now=lambda now=now: now, progress=told["helped"].append)
        yield one, two, told, alone, helped


def test_a_helped_publish_writes_byte_for_byte_what_one_process_writes(
    tmp_path: Path, handed: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    for one, two, told, alone, helped in _both(tmp_path, handed, monkeypatch):
        # The helper matched papers, rendered paper pages and (the parts meet in the
        # middle) maybe topics.
        assert any(isinstance(p, tuple) for p in handed)  # papers to match: a seq range
        assert any(isinstance(p, parts.Pages) for p in handed)
        assert one.new_matches == two.new_matches
        matching = {name: [m for m in told[name] if m.startswith("matching: ")] for name in told}
        assert (
            matching["helped"][-1]
            == matching["alone"][-1]
            == (f"matching: {one.papers_new} of {one.papers_new} papers against 7 topics")
        )
        assert one.files == two.files
        assert one.files.written > 0
        assert _files(alone.settings.public_dir) == _files(helped.settings.public_dir)
        # Each part is reported once as it starts, whichever process renders it: topic k
        # of n; paper pages k of n, k counting the pages begun before it (the helper's
        # parts come from the end, of other sizes, so the steps differ).
        topics = [m for m in told["alone"] if m.startswith("publishing: feeds")]
        assert [m for m in told["helped"] if m.startswith("publishing: feeds")] == topics
        assert topics
        pages = {name: [m for m in told[name] if m.startswith("publishing: paper pages")]
                 for name in told}  # fmt: skip
        assert len(pages["helped"]) == len(pages["alone"]) > 1
        begun = [int(m.split(", ")[1].split(" of ")[0]) for m in pages["helped"]]
        assert begun[0] == 1
        assert begun == sorted(set(begun))
        assert {m.split(" of ")[1] for m in pages["helped"] + pages["alone"]} == {
            str(one.papers_new + one.papers_updated)
        }


def test_an_error_in_the_helper_reaches_the_run_and_the_next_run_finishes(
    tmp_path: Path, handed: list[object]
) -> None:
    config = _project(tmp_path)
    _release(config)
    run(config, now=lambda: T0)
    public = config.settings.public_dir
    before = _files(public)
    # Without the index, everything is published again. The last topic's BibTeX and RIS
    # files are the last part, the first sent to the helper.
    (public / "index.html").unlink()
    blocker = public / feed_path(config.topics[-1].id, "bibtex")
    blocker.unlink()
    blocker.mkdir()
    handed.clear()
    with pytest.raises(PublishError) as raised:
        run(config, now=lambda: T0 + timedelta(hours=1))
    assert str(raised.value) == f"cannot write {blocker}: Is a directory"
    first = handed[0]
    assert isinstance(first, parts.Citations)
    assert first.view.id == config.topics[-1].id
    assert not list(public.rglob("*.tmp"))
    after = _files(public)
    assert all(after[name] == data for name, data in before.items() if name in after)

    blocker.rmdir()
    summary = run(config, now=lambda: T0 + timedelta(hours=2))
    assert summary.files.written == 2  # the BibTeX file and the index
    # What is published now is what the same state gives in an empty folder.
    fresh = replace(config, settings=replace(config.settings, public_dir=tmp_path / "fresh"))
    run(fresh, now=lambda: T0 + timedelta(hours=3))
    assert _files(public) == _files(tmp_path / "fresh")


_ORPHAN = """\
import os, sys, time
from datetime import UTC, datetime
from pathlib import Path

from feeds.parallel import Helper
from feeds.publish.parts import Pages, Plan, Publishing
from feeds.publish.view import Site
from feeds.state import Store

state = Path(sys.argv[1])
Store(state, datetime.now(UTC)).close()
dirty = {k: set() for k in Store.DIRTY_KINDS}
plan = Plan(state.parent, Site("t", "http://x/"), False, dirty, {}, datetime.now(UTC), {}, {}, 10)
with Helper(state, Publishing(plan)) as helper:
    helper.send(Pages())
    helper.answer()
    print(helper._proc.pid, flush=True)
    sys.stdin.readline()  # the test signals the helper, then says go on
    helper.send(Pages())
    helper.answer()
    print("still working", flush=True)
    time.sleep(60)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # an orphan nobody reaps is a zombie, which runs nothing


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_helper_ignores_interrupts_and_exits_with_its_parent(tmp_path: Path) -> None:
    script = tmp_path / "orphan.py"
    script.write_text(_ORPHAN)
    parent = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "state.sqlite3")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert parent.stdout is not None
        assert parent.stdin is not None
        pid = int(parent.stdout.readline())
        # A Ctrl-C or a `systemctl stop` signals every process: the parent decides.
        os.kill(pid, signal.SIGINT)
        os.kill(pid, signal.SIGTERM)
        parent.stdin.write("go on\n")
        parent.stdin.flush()
        assert parent.stdout.readline() == "still working\n"
        assert not _gone(pid)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 20
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(pid)
    finally:
        parent.kill()
        parent.wait()


# A helper that does its first part and dies in its second, as if killed for memory.
_DIES_LATER = """\
import os, sys
from feeds import parallel as helper
from feeds.match import step as matching
from feeds.publish import parts
done = []

def once(real):
    def run(self, store, part):
        if done:
            os._exit(9)
        done.append(1)
        return real(self, store, part)
    return run

parts.Publishing.run = once(parts.Publishing.run)
matching.Matching.run = once(matching.Matching.run)
helper._main(int(sys.argv[1]), int(sys.argv[2]))
"""


@pytest.mark.parametrize("how", ["cannot-start", "dies-at-once", "dies-later"])
def test_without_a_working_helper_the_run_renders_everything_itself(
    tmp_path: Path, handed: list[object], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    script = tmp_path / "dies_later.py"
    script.write_text(_DIES_LATER)
    command = {
        "cannot-start": ["/nonexistent/python"],
        "dies-at-once": [sys.executable, "-c", "import sys; sys.exit(1)"],
        "dies-later": [sys.executable, str(script)],
    }[how]
    monkeypatch.setattr(helper, "COMMAND", command)
    for one, two, _told, alone, helped in _both(tmp_path, handed, monkeypatch):
        assert _files(alone.settings.public_dir) == _files(helped.settings.public_dir)
        assert two.files.written >= one.files.written > 0
        if how != "cannot-start":
            assert handed  # it was started, and sent parts


def test_the_helper_does_not_import_from_the_current_folder(
    tmp_path: Path, handed: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module in the folder a run starts from must not shadow a library in the helper."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "jinja2.py").write_text("import os\nos._exit(7)\n")
    monkeypatch.chdir(work)
    answered: list[object] = []
    answer = helper.Helper.answer

    def spy(self: helper.Helper[object, object]) -> object:
        answered.append(answer(self))  # raises HelperGone if it died
        return answered[-1]

    monkeypatch.setattr(helper.Helper, "answer", spy)
    config = _project(tmp_path / "project")
    _release(config)
    run(config, now=lambda: T0)
    assert len(answered) == len(handed) > 0


class _Recorded:
    """A stand-in helper for share(): it answers every part at once, and records them."""

    def __init__(self) -> None:
        self.parts: list[int] = []
        self.waiting: list[int] = []

    def send(self, part: int) -> None:
        self.parts.append(part)
        self.waiting.append(part)

    def ready(self) -> bool:
        return False  # busy until this process has nothing else to do

    def answer(self) -> int:
        return -self.waiting.pop(0)


def test_a_heavy_part_here_has_the_helper_sent_the_rest_first() -> None:
    # A topic of a quarter of a million papers taken here would leave the helper waiting
    # for minutes with two small parts: it is sent the others first (not the heavy one).
    heavy = {0: 1000}
    fake = _Recorded()
    done = list(helper.share(list(range(6)), lambda p: p, lambda _p: None, fake,  # type: ignore[arg-type]
                             lambda p: heavy.get(p, 1)))  # fmt: skip
    assert fake.parts == [5, 4, 3, 2, 1]
    assert sorted(abs(x) for x in done) == list(range(6))
    fake = _Recorded()
    list(helper.share(list(range(6)), lambda p: p, lambda _p: None, fake))  # type: ignore[arg-type]
    assert fake.parts == [5, 4]  # light parts: two at a time, the rest done here
