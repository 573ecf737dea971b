"""Write the rendered site into `public/`: atomically, and only what changed."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

# What paperfeeds owns inside public/: stale files here are ours to remove (and, anywhere,
# the temp files of a publish that was killed).
MANAGED_DIRS = ("feeds", "topics", "papers")
MANAGED_SUFFIXES = (".html", ".xml", ".json")


@dataclass(frozen=True)
class WriteStats:
    written: int
    unchanged: int
    removed: int


def write_file(path: Path, data: bytes) -> bool:
    """Write data to path via a temp file and rename; return False if it was already so."""
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    return _replace(path, [data], compare=False)


def write_stream(path: Path, pieces: Iterable[bytes]) -> bool:
    """Write a file given in pieces (too large to hold), via a temp file; False if unchanged."""
    return _replace(path, pieces, compare=True)


def _replace(path: Path, pieces: Iterable[bytes], *, compare: bool) -> bool:
    """Write pieces to a temp file beside path, then rename it over path (atomic).

    With `compare`, an equal existing file is kept as it is (same bytes, same mtime).
    """
    import filecmp  # here, not at the top: a run that writes nothing need not load them
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    # The temp name starts with "." so that readers and `feeds serve` never list it.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            for piece in pieces:
                f.write(piece)
        if compare and path.exists() and filecmp.cmp(tmp, path, shallow=False):
            Path(tmp).unlink()
            return False
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def sweep(root: Path, keep: Callable[[str], bool], *, papers: bool = False) -> int:
    """Remove the managed files under root that `keep` refuses, and stale temp files.

    papers/ (which may hold a million pages) is looked at only when `papers` is true.
    """
    removed = 0
    for d in ("", *(m for m in MANAGED_DIRS if papers or m != "papers")):
        folder = root / d if d else root
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            rel = f"{d}/{path.name}" if d else path.name
            stale_tmp = path.name.startswith(".") and path.name.endswith(".tmp")
            managed = d and path.suffix in MANAGED_SUFFIXES and not path.name.startswith(".")
            if stale_tmp or (managed and not keep(rel)):
                path.unlink(missing_ok=True)
                removed += 1
    return removed
