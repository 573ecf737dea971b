"""Find digest files in the inbox folders and read them. The file-system edge of ingestion."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from feeds.errors import DigestRejected

if TYPE_CHECKING:
    from feeds.model import SourceState

_PARTIAL_SUFFIXES = (".tmp", ".part", "~")


def shown(path: str) -> str:
    """Return a path as it can be printed and stored as text: a file name that is not UTF-8
    (os.fsdecode gives its bytes as lone surrogates) with those bytes escaped (`zz\\xff.txt`),
    and control characters escaped (`a\\x0ab.txt`): a newline in a name would otherwise
    print as a line of its own ("rejected: ..."), and an escape sequence would drive the
    terminal."""
    if path.isascii():
        if path.isprintable():
            return path
    else:
        path = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if path.isprintable():
        return path
    return _UNPRINTABLE.sub(_escape, path)


# Controls (C0, DEL, C1) and the line and paragraph separators: what can break a line of
# output or drive a terminal. Other unprintable characters (spaces of other widths, format
# characters) are left as they are: names in Chinese use some of them.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


@dataclass(frozen=True)
class Input:
    name: str  # how the user knows it: the path as found (see shown), or the URL
    content: bytes
    # For a remote source: its new state (validators), stored only together with the
    # digest, so that a crash in between cannot leave a "not modified" with nothing ingested.
    source: SourceState | None = None
    stamp: tuple[int, int] | None = None  # a file's (size, mtime_ns) when it was read
    path: str | None = None  # an inbox file's path as the file system gives it

    @property
    def digest_hash(self) -> str:
        import hashlib  # only for new content: a run with nothing new does not load OpenSSL

        return hashlib.sha256(self.content).hexdigest()


def is_partial(name: str) -> bool:
    """Return True for names that producers use while a file is still being written."""
    return name.startswith(".") or name.endswith(_PARTIAL_SUFFIXES)


def inbox_files(folders: Iterable[Path]) -> Iterator[str]:
    """Yield the digest files of each folder, in name order; skip files still being written.

    Raises DigestRejected for a folder that does not exist, so that the caller reports it.
    """
    for folder in folders:
        if not folder.is_dir():
            raise DigestRejected("inbox folder does not exist", file=shown(str(folder)))
        # scandir: the listing says which entries are files, without a stat each; and
        # paths as strings: a year of digests is thousands of files, listed by every run.
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if not is_partial(e.name) and e.is_file()]
        base = str(folder)  # joined as Path would write them: the state knows files by it
        for name in sorted(names):
            yield name if base == "." else os.path.join(base, name)


def read_input(
    path: str,
    settle: float = 0.0,
    now: float | None = None,
    known: Callable[[str, int, int], bool] | None = None,
) -> Input | float | None:
    """Return the file's content; None when `known` says this version was read before; or
    the time (epoch seconds) to look again when the file is still being written: changed
    less than `settle` seconds ago, or changing as we read.
    """
    try:
        before = os.stat(path)
        if known is not None and known(path, before.st_size, before.st_mtime_ns):
            return None
        ready_at = before.st_mtime + settle
        if settle and (time.time() if now is None else now) < ready_at:
            return ready_at
        with open(path, "rb") as f:
            content = f.read()
        after = os.stat(path)
    except OSError as e:
        raise DigestRejected(f"cannot read: {e.strerror}", file=shown(path)) from e
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) or len(
        content
    ) != after.st_size:
        return (time.time() if now is None else now) + max(settle, 1.0)
    return Input(shown(path), content, stamp=(after.st_size, after.st_mtime_ns), path=path)
