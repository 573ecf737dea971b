"""Write the rendered site into `public/`: atomically, and only what changed."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

from feeds.errors import PublishError
from feeds.publish.formats import ALL_FORMATS

if TYPE_CHECKING:
    import queue
    from types import TracebackType

# Where a publish that was killed may have left temp files of its own.
MANAGED_DIRS = ("feeds", "topics", "papers")
# Temp files of ours, `.<name>.<pid>.tmp` (see _replace; earlier versions ended the name
# with a random word): the only files a sweep removes. `.drafts.tmp` is not one.
_KINDS = sorted({"html", "opml", *(f.suffix.rpartition(".")[2] for f in ALL_FORMATS)})
_TEMP = re.compile(rf"\..+\.(?:{'|'.join(_KINDS)})\.\w+\.tmp")


@dataclass(frozen=True)
class WriteStats:
    written: int
    unchanged: int
    removed: int
    search: str = ""  # why the search index is not available or was not updated, if so

    def then(self, again: WriteStats) -> WriteStats:
        """Return the stats of this publish followed by `again` (the one after links)."""
        return WriteStats(self.written + again.written, again.unchanged,
                          self.removed + again.removed, again.search or self.search)  # fmt: skip


def cannot_write(path: Path | str, e: OSError) -> PublishError:
    """The error to show for an OSError met while writing path (its cause chained)."""
    error = PublishError(f"cannot write {path}: {e.strerror or e}")
    error.__cause__ = e
    return error


# What tells a published file is still what a publish wrote: its size and modification
# time in nanoseconds (a file changed since, by hand, an editor or a sync tool, has others).
Stamp = tuple[int, int]


def write_file(path: Path, data: bytes) -> tuple[bool, Stamp]:
    """Write data to path via a temp file and rename; return whether it was written (False
    if it was already so), and the file's stamp."""
    try:
        st = path.stat()
        if st.st_size == len(data) and path.read_bytes() == data:
            return False, (st.st_size, st.st_mtime_ns)
    except FileNotFoundError:
        pass
    return True, _replace(path, data)


def file_stamp(path: Path) -> Stamp | None:
    """Return a file's stamp (see Stamp), or None if it is not there."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class Writer:
    """Writes the larger files on a thread of its own while the caller renders the next
    ones; the small ones at once.

    Rendering is Python, on one core; much of writing a file is the kernel's (copying the
    bytes, allocating blocks, the rename over the old file, which on ext4 starts its
    write-back: ~0.5 ms for a 150 kB feed), and during a system call the other core may
    run Python. A new digest's ~220 feeds and reading lists (30 MB) took ~160 ms of system
    calls, now spent beside the rendering. A small file is not worth handing over: after
    each system call the thread waits for the interpreter lock (up to 5 ms while the caller
    runs Python), which for a paper page costs more than writing it. Measured with 1 ms of
    rendering a file: 3,000 pages of 10 kB took 3.48 s through the thread, 3.29 s written
    at once; 300 files of 150 kB the same either way; a real new digest 14–17 % less.

    Each file is written with `write_file` (atomic, unchanged files kept), once: a small
    file may land before a larger one given earlier, so a path must not be given twice.
    Leaving the
    `with` block waits for the last one; the first error is raised there (or at the next
    `write`), and the files queued after it are not written: what was published stays
    whole, and the caller's state says what is still to do.
    """

    INLINE_BELOW = 32 * 1024  # bytes: smaller files are written by the caller

    def __init__(self, depth: int = 32) -> None:
        import queue  # here: a run that writes nothing need not load them
        import threading

        # Bounded: a full build renders faster than some disks write, and a million pages
        # must not wait in memory.
        self._jobs: queue.Queue[tuple[Path, bytes] | None] = queue.Queue(depth)
        self._error: BaseException | None = None
        self._stop = False
        # [unchanged, written], one pair per thread: `+=` is not atomic across threads.
        self._at_once = [0, 0]
        self._handed = [0, 0]
        # The stamps of the files written or found unchanged, but paper pages (never
        # reused): what the next publish may build on (see Plan.ours).
        self.stamps: dict[Path, Stamp] = {}
        self._thread = threading.Thread(target=self._work, name="feeds-writer", daemon=True)
        self._thread.start()

    @property
    def written(self) -> int:
        return self._at_once[1] + self._handed[1]

    @property
    def unchanged(self) -> int:
        return self._at_once[0] + self._handed[0]

    def write(self, path: Path, data: bytes) -> None:
        """Write a small file now; queue a larger one (waiting only if the queue is full)."""
        if self._error is not None:
            raise self._error
        if len(data) >= self.INLINE_BELOW:
            self._jobs.put((path, data))
            return
        try:
            self._at_once[self._write(path, data)] += 1
        except OSError as e:
            raise cannot_write(path, e) from e

    def _write(self, path: Path, data: bytes) -> bool:
        changed, stamp = write_file(path, data)
        if path.parent.name != "papers":
            self.stamps[path] = stamp  # one thread per key: no race
        return changed

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            if self._error is not None or self._stop:
                continue  # drain, so that a caller blocked on a full queue goes on
            path, data = job
            try:
                self._handed[self._write(path, data)] += 1
            except OSError as e:  # raised again in the caller's thread, as ours
                self._error = cannot_write(path, e)
            except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
                self._error = e

    def close(self) -> None:
        """Wait until every queued file is written; raise the first error."""
        self._jobs.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        _e: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        if kind is None:
            self.close()
            return
        self._stop = True  # the caller failed: finish the file in hand, write no more
        self._jobs.put(None)
        self._thread.join()


_MADE: set[Path] = set()  # folders seen to exist: one mkdir per folder, not per file
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)


def _replace(path: Path, data: bytes) -> Stamp:
    """Write data to a temp file beside path, then rename it over path (atomic); return
    the file's stamp (the rename keeps it).

    Plain system calls, no tempfile: a full build writes a million files, and the file
    system's own cost is the floor this is measured against. One publisher runs at a time
    (feeds.state.lock) and writes each file once (Writer), so the temp name only needs the
    process id.
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
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, 0o644)  # whatever the umask: a web server must read it
            st = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return st.st_size, st.st_mtime_ns
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def sweep(root: Path, *, papers: bool = False) -> int:
    """Remove the temp files that a publish which died left under root (see _replace);
    return how many. Nothing else: a file of any other name may be the user's.

    papers/ (which may hold a million pages) is looked at only when `papers` is true.
    """
    removed = 0
    for d in ("", *(m for m in MANAGED_DIRS if papers or m != "papers")):
        folder = root / d if d else root
        if not folder.is_dir():
            continue
        # scandir streams the entries: a listing of papers/ would hold a million names.
        with os.scandir(folder) as entries:
            for entry in entries:
                if _TEMP.fullmatch(entry.name):
                    Path(entry.path).unlink(missing_ok=True)
                    removed += 1
    return removed
