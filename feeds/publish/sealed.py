"""The folders of the search index: sealed when written whole, trusted only while they are.

A folder of the index is trusted only with its `.complete.json`, written last, once every
file of it was found whole (a full disk may cut them short while all seemed to go well),
and only while its files are still the ones listed there. Pagefind runs in a temp folder
named with the run's process id, and builds beside the final folder in `.build-<pid>-*`:
a run that finds those of a run no longer alive (killed with SIGKILL) removes them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zlib
from pathlib import Path

from feeds.errors import FeedsError

COMPLETE = ".complete.json"  # in a folder written whole: each of its files and its size
STAGING = "paperfeeds-search-"  # + the run's process id + "-": a temp folder of a run
RUNTIME = ("pagefind.js", "pagefind-worker.js")
_GZIP = (".pf_meta", ".pf_index", ".pf_fragment", ".pf_filter", ".pagefind")


class SearchError(FeedsError):
    """The search index could not be brought up to date (Pagefind failed or was stopped).

    The site is published all the same; the index stays as it was, whole."""


def files_of(folder: Path) -> dict[str, int]:
    """Return every file under folder (its completion mark aside): size by relative path."""
    found: dict[str, int] = {}
    for top, _dirs, names in os.walk(folder):
        rel = os.path.relpath(top, folder)
        for name in names:
            if rel != "." or name != COMPLETE:
                size = os.stat(os.path.join(top, name)).st_size
                found[name if rel == "." else f"{rel}/{name}"] = size
    return found


def _whole_gzip(path: Path) -> bool:
    """Return True when a gzip file decompresses to its end (a file cut short does not)."""
    inflate = zlib.decompressobj(31)
    try:
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                inflate.decompress(chunk, 1 << 24)  # what it inflates to is not kept
                while inflate.unconsumed_tail:
                    inflate.decompress(inflate.unconsumed_tail, 1 << 24)
    except (OSError, zlib.error):
        return False
    return inflate.eof


def seal(folder: Path, name: str, runtime: bool, written: dict[str, int]) -> None:
    """Check that Pagefind's output in folder is whole, then mark it complete (last).
    `written`: the files written from Pagefind's answer, and their sizes.

    Raise SearchError when it is not: a file cut short or empty, the index its entry file
    names missing, or (`runtime`, the primary) the runtime missing."""
    files = files_of(folder)
    problem = ""
    try:
        entry = json.loads((folder / "pagefind-entry.json").read_bytes())
        wanted = [f"pagefind.{lang['hash']}.pf_meta" for lang in entry["languages"].values()]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        problem = "pagefind-entry.json is missing or cut short"
        wanted = []
    wanted += list(RUNTIME) if runtime else []
    for rel in wanted:
        if not files.get(rel):
            problem = problem or f"{rel} is missing"
    for rel, size in files.items():
        if problem:
            break
        # A file written here from Pagefind's answer is whole if it has the size written
        # (a write that fails raises): compared, not read back; any other is read through.
        whole = size == written[rel] if rel in written else _whole_gzip(folder / rel)
        if rel.endswith(_GZIP) and not whole:
            problem = f"{rel} is cut short"
    if problem:
        raise SearchError(f"search index {name}: {problem} (a full disk?)")
    (folder / COMPLETE).write_text(json.dumps(files, sort_keys=True), "utf-8")


def complete(folder: Path, deep: bool) -> bool:
    """Return True when folder was sealed and still holds the files it was sealed with, of
    the same sizes: every file when `deep`, else those at its top level (what a browser
    loads first: the entry, the metadata, the runtime), a few stats whatever its size."""
    try:
        sealed = json.loads((folder / COMPLETE).read_bytes())
        if deep:
            return isinstance(sealed, dict) and sealed == files_of(folder)
        with os.scandir(folder) as entries:
            top = {e.name: e.stat().st_size for e in entries if e.is_file()}
    except (OSError, ValueError):
        return False
    top.pop(COMPLETE, None)
    if not isinstance(sealed, dict):
        return False
    return top == {rel: size for rel, size in sealed.items() if "/" not in rel}


def _alive(pid: int) -> bool:
    """Return True while a process of that id runs (a zombie has ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: alive as far as we can tell
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _pid_in(name: str, prefix: str) -> int | None:
    """Return the process id in `<prefix><pid>-...`, or None."""
    pid, dash, _rest = name.removeprefix(prefix).partition("-")
    return int(pid) if dash and pid.isdigit() else None


def _listed(folder: Path, prefix: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return [e.name for e in entries if e.name.startswith(prefix)]
    except OSError:
        return []


def remove_leftovers(root: Path, now: float) -> None:
    """Remove what runs that died left: their staging folders in the temp folder (which
    other projects' runs share: only those of a process no longer alive, or, named
    without one by an earlier version, untouched for a day) and the `.build-*` folders
    in root, public/search (any but this process's: the caller holds the state's lock)."""
    temp = Path(tempfile.gettempdir())
    for name in _listed(temp, STAGING):
        pid = _pid_in(name, STAGING)
        if pid is None:
            try:
                dead = now - (temp / name).stat().st_mtime > 86400
            except OSError:
                continue
        else:
            dead = not _alive(pid)
        if dead:
            shutil.rmtree(temp / name, ignore_errors=True)
    for name in _listed(root, ".build-"):
        pid = _pid_in(name, ".build-")  # none: not one of ours, whatever it holds
        if pid is not None and pid != os.getpid():
            shutil.rmtree(root / name, ignore_errors=True)
