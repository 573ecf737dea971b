"""The helper process can never wait for the run for good, nor the run for it.

Before, parts and answers shared one pipe that the run read only between parts: a run that
sent many parts ahead (3,000 small topics, whose BibTeX parts weigh nothing) while the
helper answered filled both directions, and both processes waited for ever.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from feeds.sources.digest import parse
from tests.conftest import ROOT, Workspace, run_feeds

SIZE = 64_000  # bytes a part and an answer carry: a few fill a pipe either way


@dataclass(frozen=True)
class Echo:
    """A job whose answer is as large as its part (the helper imports it from here)."""

    def run(self, _store: object, part: tuple[int, bytes]) -> tuple[int, bytes]:
        return part[0], part[1][::-1]


_SHARE = """\
import sys
from datetime import UTC, datetime
from pathlib import Path

from feeds import parallel
from feeds.state import Store
from tests.test_helper_pipes import SIZE, Echo

state = Path(sys.argv[1])
Store(state, datetime.now(UTC)).close()
parts = [(i, bytes([i % 251]) * SIZE) for i in range(300)]
# The first part weighs 1 and the rest nothing: the run sends every other part ahead
# before it takes its own (see share), as a publish of many small topics does.
with parallel.Helper(state, Echo()) as helper:
    done = list(parallel.share(parts, lambda p: (p[0], p[1][::-1]), lambda p: None, helper,
                               lambda p: int(p[0] == 0)))
print(len(done), sorted(i for i, _ in done) == list(range(300)), flush=True)
"""


def test_parts_sent_ahead_and_large_answers_never_block_both_processes(tmp_path: Path) -> None:
    script = tmp_path / "share.py"
    script.write_text(_SHARE)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "state.sqlite3")],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "300 True\n"


def test_a_first_run_with_3000_topics_by_example_ends(workspace: Workspace) -> None:
    titles = sorted(
        {
            p.title
            for f in sorted(workspace.inbox.glob("*.txt"))
            for _line, p in parse(f.read_bytes(), f.name).papers
        }
    )
    topics = [
        f"  - id: t{i:04d}\n    title: Topic {i}\n    like:\n"
        f"      - {titles[i % len(titles)]!r}\n      - {titles[(i * 7 + 3) % len(titles)]!r}"
        for i in range(3000)
    ]
    workspace.subscriptions.write_text("topics:\n" + "\n".join(topics) + "\n", encoding="utf-8")
    r = run_feeds(workspace.root, "run", *workspace.cli_args(), "--quiet", timeout=600)
    assert r.returncode == 0, r.stderr
    assert len(list((workspace.public / "feeds").glob("t*.json"))) == 3000
