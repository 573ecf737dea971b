"""The code stays lint-clean (ruff) and type-clean (mypy --strict), as CI checks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> list[str]:
    exe = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if exe is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return [exe]


def test_ruff_check() -> None:
    r = subprocess.run([*_tool("ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format() -> None:
    r = subprocess.run(
        [*_tool("ruff"), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_strict() -> None:
    r = subprocess.run(_tool("mypy"), cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
