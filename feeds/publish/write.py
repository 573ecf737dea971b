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


_MADE: set[Path] = set()  # folders seen to exist: one mkdir per folder, not per file
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)


def _replace(path: Path, pieces: Iterable[bytes], *, compare: bool) -> bool:
    """Write pieces to a temp file beside path, then rename it over path (atomic).

    With `compare`, an equal existing file is kept as it is (same bytes, same mtime).
    Plain system calls, no tempfile: a full build writes a million files, and the file
    system's own cost is the floor this is measured against. One publisher runs at a time
    (feeds.lock), so the temp name only needs the process id.
    """
    folder = path.parent
    if folder not in _MADE:
        folder.mkdir(parents=True, exist_ok=True)
        _MADE.add(folder)
    # The temp name starts with "." so that readers and `feeds serve` never list it.
    tmp = folder / f".{path.name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, _FLAGS, 0o644)
    except FileNotFoundError:  # the folder went away since (public/ deleted, say)
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, _FLAGS, 0o644)
    try:
        try:
            if isinstance(pieces, list) and len(pieces) == 1:
                data = memoryview(pieces[0])
                while data:
                    data = data[os.write(fd, data) :]
            else:
                with open(fd, "wb", closefd=False) as f:
                    f.writelines(pieces)
            os.fchmod(fd, 0o644)  # whatever the umask: a web server must read it
        finally:
            os.close(fd)
        if compare and _same(tmp, path):
            tmp.unlink()
            return False
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return True


def _same(a: Path, b: Path) -> bool:
    import filecmp  # here, not at the top: a run that writes nothing need not load it

    try:
        return filecmp.cmp(a, b, shallow=False)
    except FileNotFoundError:
        return False


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
