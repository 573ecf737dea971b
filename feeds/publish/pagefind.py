"""Pagefind's side of the search index: its binary, its runs, and the files it writes.

Records go to Pagefind in memory, through its service mode (`pagefind --service`, the
protocol its own Python API speaks: base64 JSON messages ended by commas on stdin and
stdout), one process per folder of the index, two at a time (each works on about one
core); the files of the index come back the same way and are written here. Its own Python
API is not used: it waits a tenth of a second per answer (500 s for 5,000 records unless
they are sent all at once) and needs asyncio.

Each process runs in a temp folder named with the run's process id (its working folder
and its log); each folder of the index is built beside the final one, sealed, then moved
into place whole (see feeds.publish.sealed).
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from feeds.publish.sealed import RUNTIME, STAGING, SearchError, complete, seal

TIMEOUT = 1800.0  # seconds one Pagefind run may take before it is given up
NOT_FOUND = (
    "Pagefind was not found (install paperfeeds with its dependencies, or set "
    "PAGEFIND_BINARY_PATH): the site is published, and its search page says search is "
    "not available"
)
# What a shard keeps of Pagefind's output: its index alone (the runtime is the primary's).
INDEX_FILES = ("pagefind-entry.json", "index", "fragment", "filter")
NICE = 5  # Pagefind yields the cores to the rendering of feeds and pages it runs beside


def pagefind_binary() -> Path | None:
    """Return Pagefind's binary, found where Pagefind's own Python wrapper looks for it
    (PAGEFIND_BINARY_PATH, the pagefind_bin_extended then pagefind_bin package, then
    `pagefind_extended` or `pagefind` on the PATH), or None when there is none that runs.

    Not through the wrapper's own function: importing it loads asyncio (~60 ms of a run
    that adds a digest)."""
    named = os.environ.get("PAGEFIND_BINARY_PATH")
    exe: Path | None = Path(named) if named is not None else None
    if named is None:
        for package in ("pagefind_bin_extended", "pagefind_bin"):
            try:
                exe = Path(importlib.import_module(package).get_executable())
            except (ImportError, OSError, AttributeError):
                continue
            break
        else:
            found = shutil.which("pagefind_extended") or shutil.which("pagefind")
            exe = Path(found) if found else None
    if exe is None or not exe.is_file() or not os.access(exe, os.X_OK):
        return None
    return exe


def run_pagefind(cmd: list[str], what: str) -> str:
    """Run Pagefind to its end; return what it printed. Raise SearchError if it fails."""
    from feeds.parallel import ends_with_this_process

    try:
        done = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT,
            check=False, preexec_fn=ends_with_this_process(),
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as e:
        raise SearchError(f"{what}: Pagefind did not run: {e}") from e
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise SearchError(f"{what}: Pagefind failed (exit {done.returncode}): {' '.join(said)}")
    return done.stdout


def _message(number: int, payload: dict[str, Any]) -> bytes:
    data = json.dumps({"message_id": number, "payload": payload}, ensure_ascii=False)
    return base64.b64encode(data.encode("utf-8")) + b","


def _send(stdin: IO[bytes], records: Iterable[tuple[str, bytes]], index: int,
          failed: list[BaseException]) -> None:  # fmt: skip
    """Write the records (URL, HTML) and the request for the index's files to Pagefind's
    input, each record as it is made; a Pagefind that ended early is told by its output,
    not here. A record that cannot be made goes into `failed`, and Pagefind's input is
    closed: it ends, and index_records raises that error."""
    try:
        for n, (url, html) in enumerate(records, 2):
            add = {"type": "AddFile", "index_id": index, "url": url, "file_path": None,
                   "file_contents": html.decode("utf-8")}  # fmt: skip
            if not _put(stdin, _message(n, add)):
                return
    except Exception as e:  # noqa: BLE001 - raised again by index_records, on its thread
        failed.append(e)
        with contextlib.suppress(OSError, ValueError):
            stdin.close()
        return
    # Its files come back in the answer: Pagefind's own WriteFiles answers before the
    # files are all written, and its service ends at once when its input does.
    _put(stdin, _message(0, {"type": "GetFiles", "index_id": index}), flush=True)


def _put(stdin: IO[bytes], message: bytes, flush: bool = False) -> bool:
    """Write a message to Pagefind's input; False when it is closed (Pagefind ended, or
    was stopped)."""
    try:
        stdin.write(message)
        if flush:
            stdin.flush()
    except (OSError, ValueError):
        return False
    return True


class _Answers:
    """Pagefind's answers, one at a time, from its output."""

    def __init__(self, stdout: IO[bytes]) -> None:
        self.stdout = stdout
        self.buffer = b""

    def next(self) -> dict[str, Any] | None:
        """Return the next answer's payload, or None when Pagefind's output ended."""
        # The index's files come in one answer of tens of MB: its chunks are joined once,
        # and each is searched once for the answer's end (not the whole buffer again).
        chunks = [self.buffer]
        while b"," not in chunks[-1]:
            chunk = self.stdout.read1(1 << 20)  # type: ignore[attr-defined]
            if not chunk:
                self.buffer = b"".join(chunks)
                return None
            chunks.append(chunk)
        message, _, self.buffer = b"".join(chunks).partition(b",")
        try:
            payload = json.loads(base64.b64decode(message))["payload"]
        except (ValueError, KeyError, TypeError) as e:
            raise SearchError(f"Pagefind answered what cannot be read: {message[:80]!r}") from e
        return payload if isinstance(payload, dict) else {}


def index_records(exe: Path, records: Iterable[tuple[str, bytes]], out: Path, staging: Path,
                  what: str, keep: Callable[[str], bool],
                  running: set[Any] | None = None) -> dict[str, int]:  # fmt: skip
    """Have Pagefind index the records (URL, HTML), sent as they are made, each in the
    language its <html lang> names (an index per language); write the files of its index
    that `keep` (given their path) into the folder out, while Pagefind still runs (as when
    it writes them itself); return their sizes by path. Its process is in `running` while
    it runs.

    Raise SearchError when it fails, stops or says something went wrong."""
    from feeds.parallel import ends_with_this_process

    cmd = [str(exe), "--service", "--output-path", str(out)]  # out: what its log names
    with (staging / "pagefind.log").open("wb") as log:
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=staging,
                preexec_fn=ends_with_this_process(),  # noqa: PLW1509 - it only calls prctl
            )
        except OSError as e:
            raise SearchError(f"{what}: Pagefind did not run: {e}") from e
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, proc.pid, NICE)
        assert proc.stdin is not None
        assert proc.stdout is not None
        if running is not None:
            running.add(proc)
        timer = threading.Timer(TIMEOUT, proc.kill)
        timer.start()
        sender: threading.Thread | None = None
        failed: list[BaseException] = []  # the error of a record that could not be made
        try:
            answers = _Answers(proc.stdout)
            config: dict[str, str] = {}  # no force_language: a record's <html lang> says
            try:
                proc.stdin.write(_message(1, {"type": "NewIndex", "config": config}))
                proc.stdin.flush()
            except OSError:
                pass  # said by its output's end
            answer = answers.next()
            if answer is not None and answer.get("type") == "NewIndex":
                index = int(answer["index_id"])
                sender = threading.Thread(target=_send, daemon=True,
                                          args=(proc.stdin, records, index, failed))  # fmt: skip
                sender.start()
                while (answer := answers.next()) is not None:
                    if answer.get("type") in ("GetFiles", "Error"):
                        break
            if answer is None or answer.get("type") != "GetFiles":
                said = (answer or {}).get("message") or _tail(staging / "pagefind.log")
                proc.kill()
                code = proc.wait()
                if sender is not None:
                    sender.join(timeout=5)
                if failed:  # a record could not be made: that error, not Pagefind's end
                    raise failed[0]
                raise SearchError(f"{what}: Pagefind failed (exit {code}): {said}".rstrip(": "))
            written = _write(out, answer.get("files") or [], keep)
        finally:
            timer.cancel()
            if sender is not None:
                sender.join(timeout=5)
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            proc.stdout.close()
            if running is not None:
                running.discard(proc)
    if code != 0:
        said = _tail(staging / "pagefind.log")
        raise SearchError(f"{what}: Pagefind failed (exit {code}): {said}".rstrip(": "))
    return written


# One shard's files written at a time: two threads each creating ten thousand small files
# hand the interpreter lock to each other at every system call, and took three times as
# long together as one after the other.
_WRITING = threading.Lock()
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def _write(
    out: Path, files: Iterable[dict[str, str]], keep: Callable[[str], bool]
) -> dict[str, int]:
    """Write Pagefind's files (path, base64 content) that `keep` into the folder out;
    return their sizes by path."""
    root = str(out)
    written: dict[str, int] = {}
    with _WRITING:
        os.makedirs(root, exist_ok=True)
        made = {root}
        for file in files:
            rel = file["path"].lstrip("/")
            if not keep(rel) or ".." in rel.split("/"):
                continue
            path = os.path.join(root, rel)
            parent = os.path.dirname(path)
            if parent not in made:
                os.makedirs(parent, exist_ok=True)
                made.add(parent)
            data = base64.b64decode(file["content"])
            if rel == "pagefind-entry.json":
                data = _in_order(data)
            _write_file(path, data)
            written[rel] = len(data)
    return written


def _write_file(path: str, data: bytes) -> None:
    # os.open and os.write: a Python file object costs more than the write of a 1 kB
    # fragment. os.write may write less than asked (a signal, a nearly full disk).
    fd = os.open(path, _NEW_FILE, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _in_order(entry: bytes) -> bytes:
    """Return Pagefind's entry file with its languages in order: it lists an index's
    languages in no fixed order, and the same records must give the same files (a bucket
    uploads what changed; another machine publishing the same site uploads nothing)."""
    try:
        data = json.loads(entry)
        data["languages"] = dict(sorted(data["languages"].items()))
    except (ValueError, TypeError, KeyError, AttributeError):
        return entry  # as it is: _seal says what is wrong with it
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _tail(log: Path) -> str:
    try:
        return " ".join(log.read_text("utf-8", "replace").strip().splitlines()[-3:])
    except OSError:
        return ""


class Records(Protocol):
    """The records (URL, HTML) of one folder of the index. They may be made while Pagefind
    reads them, so that it starts on the first at once; the folder's name and its
    records.tsv (None: it has none) are asked for once every record was read."""

    def __iter__(self) -> Iterator[tuple[str, bytes]]: ...
    def name(self) -> str: ...
    def tsv(self) -> str | None: ...


@dataclass(frozen=True)
class Made:
    """Records made beforehand, for the folder `folder` (see Records)."""

    folder: str
    records: Sequence[tuple[str, bytes]]

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        return iter(self.records)

    def name(self) -> str:
        return self.folder

    def tsv(self) -> None:
        return None


class Builder:
    """Runs Pagefind over records, two at a time (it works on about one core), each into a
    folder of its own beside the final ones, then moves it into place whole."""

    def __init__(self, exe: Path, root: Path) -> None:
        self.exe = exe
        self.root = root
        self.workers = max(1, min(2, os.cpu_count() or 1))
        self.pool = ThreadPoolExecutor(max_workers=self.workers)
        self.pending: list[Future[str]] = []
        self.running: set[subprocess.Popen[bytes]] = set()
        self.stopped = False

    def submit(self, key: str, records: Records, keep: Sequence[str]) -> Future[str]:
        """Index records into root/<their name>; return the future of that name. `key`
        names the folder until then (in the messages, and its build folder). Waits while
        two others are being indexed (memory stays bounded)."""
        while sum(not f.done() for f in self.pending) >= self.workers:
            next(f for f in self.pending if not f.done()).exception()  # waits for it
        if self.stopped:
            raise SearchError(f"search index {key}: stopped")
        future = self.pool.submit(self._index, key, records, keep)
        self.pending.append(future)
        return future

    def _index(self, key: str, records: Records, keep: Sequence[str]) -> str:
        build = self.root / f".build-{os.getpid()}-{key.replace('/', '-')}"
        old = self.root / f".build-{os.getpid()}-old-{key.replace('/', '-')}"
        staging = Path(tempfile.mkdtemp(prefix=f"{STAGING}{os.getpid()}-"))
        try:
            shutil.rmtree(build, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
            if self.stopped:
                raise SearchError(f"search index {key}: stopped")

            # Not Pagefind's UI files: search.js draws the results.
            def kept(rel: str) -> bool:
                top = rel.split("/", 1)[0]
                return top in keep or top.endswith((".pf_meta", ".pagefind"))

            what = f"search index {key}"
            written = index_records(self.exe, records, build, staging, what, kept, self.running)
            name, tsv = records.name(), records.tsv()  # every record was made and read
            final = self.root / name
            if tsv is not None:
                (build / "records.tsv").write_text(tsv, "utf-8")
            seal(build, name, RUNTIME[0] in keep, written)
            if complete(final, deep=True):  # the same records indexed before: that one stays
                shutil.rmtree(build)
            elif final.exists():  # the same records, incomplete: replaced, never merged
                os.replace(final, old)
                os.replace(build, final)
            else:
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(build, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(build, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
        return name

    def stop(self) -> None:
        """Stop what is being indexed and what waits to be (the publish failed)."""
        self.stopped = True
        for proc in list(self.running):
            proc.kill()

    def close(self) -> None:
        self.pool.shutdown(wait=True)
