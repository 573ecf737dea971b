"""Shared fixtures: a scratch copy of the seeds and the example subscriptions, and the CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from feeds.config import Config, load

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Workspace:
    """A scratch project folder: inbox (a copy of seeds/), config, and where output goes."""

    root: Path
    inbox: Path
    subscriptions: Path
    public: Path
    state: Path

    def config(self, subscriptions: Path | None = None) -> Config:
        """Return the loaded config, pointed at this workspace (as the CLI options would)."""
        config = load(subscriptions or self.subscriptions, None)
        s = replace(config.settings, inbox=(self.inbox,), public_dir=self.public, state=self.state)
        return replace(config, settings=s)

    def cli_args(self) -> list[str]:
        return [
            "--subscriptions", str(self.subscriptions), "--inbox", str(self.inbox),
            "--public", str(self.public), "--state", str(self.state),
        ]  # fmt: skip


def make_workspace(root: Path) -> Workspace:
    """Copy seeds/ and config/subscriptions.yaml into root and return the paths."""
    inbox = root / "inbox"
    shutil.copytree(ROOT / "seeds", inbox)
    (root / "config").mkdir(exist_ok=True)
    subscriptions = root / "config" / "subscriptions.yaml"
    shutil.copyfile(ROOT / "config" / "subscriptions.yaml", subscriptions)
    return Workspace(root, inbox, subscriptions, root / "public", root / "state" / "state.sqlite3")


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return make_workspace(tmp_path)


def run_feeds(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `python -m feeds ARGS` in cwd and return the finished process (never raises)."""
    return subprocess.run(
        [sys.executable, "-m", "feeds", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
