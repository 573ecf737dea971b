"""Find digest files in the inbox folders and read them. The file-system edge of ingestion."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from feeds.errors import DigestRejected

_PARTIAL_SUFFIXES = (".tmp", ".part", "~")


@dataclass(frozen=True)
class Input:
    name: str  # how the user knows it: the path as found, or the URL
    content: bytes

    @property
    def digest_hash(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


def is_partial(name: str) -> bool:
    """Return True for names that producers use while a file is still being written."""
    return name.startswith(".") or name.endswith(_PARTIAL_SUFFIXES)


def inbox_files(folders: Iterable[Path]) -> Iterator[Path]:
    """Yield the digest files of each folder, in name order; skip files still being written.

    Raises DigestRejected for a folder that does not exist, so that the caller reports it.
    """
    for folder in folders:
        if not folder.is_dir():
            raise DigestRejected("inbox folder does not exist", file=str(folder))
        for path in sorted(folder.iterdir()):
            if path.is_file() and not is_partial(path.name):
                yield path


def read_input(path: Path) -> Input:
    try:
        return Input(str(path), path.read_bytes())
    except OSError as e:
        raise DigestRejected(f"cannot read: {e.strerror}", file=str(path)) from e
