"""Derived, disposable data kept between runs (in $XDG_CACHE_HOME/paperfeeds): the
validated config and the matcher built from it, each under the exact bytes of what it was
made of and of the code that made it. A miss is never an error, and a cache that cannot be
written only costs time."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from feeds import __version__

# Bump when the pickled objects change shape in a way the code stamp below would not see.
CACHE_FORMAT = 2

T = TypeVar("T")


def cached(
    name: str,
    made_of: Sequence[Path | None],
    build: Callable[[], T],
    kind: type[T],
    also: Callable[[T], Sequence[tuple[Path, Stamp | None]]] = lambda _value: (),
) -> T:
    """Return build()'s result, from the cache when it was built before from the same bytes
    of the files `made_of` in the same working folder by the same code; `name` says what it
    is (one cache file per name and place, overwritten: the cache cannot grow).

    `also` names the files a value was made of that only the value knows (a topic's
    library, named in the subscriptions file), each with its stamp from before it was read:
    a cached value is used while each of them is as it was (see stamp_of; large files are
    not read on every run). A stamp taken after the file was read would hide a change made
    while it was read (Better BibTeX rewrites its export whenever Zotero changes)."""
    import zlib

    try:
        files = [p.read_bytes() if p is not None else None for p in made_of]
        key: tuple[Any, ...] | None = (CACHE_FORMAT, __version__, os.getcwd(), code_stamp(), files)
    except OSError:
        key = None  # a missing file: let the reader say so, with its usual message
    where = "\0".join([os.getcwd(), *map(str, made_of)]).encode()
    path = cache_dir() / f"{name}-{zlib.crc32(where):08x}.pickle"
    if key is not None:
        found = cache_read(path, key)
        if isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], kind):
            value, stamps = found
            if all(stamp(Path(p)) == was for p, was in stamps):
                return value  # type: ignore[no-any-return]
    value = build()
    if key is not None:
        stamps = [(str(p), was) for p, was in also(value)]
        if all(was is not None for _p, was in stamps):
            cache_write(path, key, (value, stamps))
    return value


Stamp = tuple[int, ...]  # see stamp_of


def stamp_of(st: os.stat_result) -> Stamp:
    """Return what tells a file changed without reading it: which file it is (a file
    replaced by a rename is another), its size, modification and change times (the change
    time moves on every write, whatever a tool sets the other to)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def stamp(path: Path) -> Stamp | None:
    """Return a file's stamp (see stamp_of); None for a file that is not there."""
    try:
        return stamp_of(path.stat())
    except OSError:
        return None


def cache_dir() -> Path:
    """Where derived, disposable data goes: $XDG_CACHE_HOME/paperfeeds or ~/.cache/paperfeeds."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "paperfeeds"


def code_stamp() -> tuple[tuple[str, int, int], ...]:
    """Return what tells this package's code from another's: the name, time and size of
    every module in it. Derived, not a hand-kept list of the readers: whatever module a
    cached object's making went through, an edit to it (or a moved file) is a miss."""
    here = Path(__file__).parent
    found = []
    for path in sorted(here.rglob("*.py")):
        st = path.stat()
        found.append((str(path.relative_to(here)), st.st_mtime_ns, st.st_size))
    return tuple(found)


def cache_read(path: Path, key: object) -> object | None:
    """Return what cache_write stored at path under an equal key; None for a missing,
    damaged or foreign file, or another key (a miss is never an error)."""
    import gc

    collecting = gc.isenabled()
    gc.disable()  # unpickling makes many small objects that live on: nothing to collect
    try:
        with path.open("rb") as f:
            stored_key, value = pickle.load(f)
    except Exception:  # noqa: BLE001 -- a missing, damaged or foreign file is just a miss
        return None
    finally:
        if collecting:
            gc.enable()
    return value if stored_key == key else None


def cache_write(path: Path, key: object, value: object) -> None:
    """Store value under key at path (atomically); a cache that cannot be written is none."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, path)
    except OSError:
        pass  # no cache (a read-only home, say): every run does the work, as before
