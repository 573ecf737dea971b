"""A helper process for big jobs: the machine's other core does some of their parts.

Python runs one thread at a time in a process (the interpreter lock); a second process
runs beside it. A job that splits into parts either process can do — publishing (topics,
batches of paper pages: feeds.publish.parts.Publishing) or matching a long history
(ranges of papers: feeds.match.step.Matching) — is shared: this process does parts from the
first on, the helper from the last back, until they meet (see share).

The helper is `python -m feeds.parallel`: it opens the state to read only (in WAL mode it
reads while this process holds the run's lock and writes), is sent the job, then parts,
and answers each with what the job's `run` returned. A fresh interpreter rather than
multiprocessing's spawn, which would run the caller's main script again in the helper (a
script that calls feeds.pipeline.run would start a second run there).

It ignores SIGINT and SIGTERM: this process decides when a run stops (`feeds watch`
finishes its cycle on SIGTERM, and a Ctrl-C reaches every process of the terminal). It
exits when this process closes the connection or dies. If it dies itself (killed for
memory, say), this process does what it had been sent.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, Self, TypeVar

from feeds.errors import FeedsError

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from feeds.state import Store

P = TypeVar("P")  # a part
R = TypeVar("R")  # what doing a part gives
P_contra = TypeVar("P_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)

# Below this much work (a paper to match or a paper page is one; see each job) a job is
# not worth a second process: starting one and importing what it needs takes ~0.3-0.5 s.
HELP_FROM = 20_000
# How the helper is started; its two pipes' file descriptors (parts in, answers out) are
# appended. `-P`: not the current folder on its import path (a `yaml.py` there must not
# shadow PyYAML).
COMMAND = [sys.executable, "-P", "-m", "feeds.parallel"]


class Job(Protocol[P_contra, R_co]):
    """What the helper is sent first: it does each part it is sent next with `run`. It
    is pickled, so it holds only what a part needs besides the state."""

    def run(self, store: Store, part: P_contra) -> R_co: ...


def shared(
    state: Path | str,
    job: Job[P, R],
    parts: Sequence[P],
    weight: Callable[[P], int],
    here: Callable[[P], R],
    begin: Callable[[P], None],
) -> Iterator[R]:
    """Do the parts and yield what each gives (in the order they are done): with a helper
    when their work (each part's `weight`, see HELP_FROM) is worth one and the machine has
    a second core, else here alone. `here` does a part in this process; `begin` is told of
    each part as it is started here or sent to the helper."""
    helper = _start(state, job) if _worth_helping(sum(map(weight, parts))) else None
    if helper is None:
        for part in parts:
            begin(part)
            yield here(part)
        return
    with helper:
        yield from share(parts, here, begin, helper, weight)


def _worth_helping(work: int) -> bool:
    if work < HELP_FROM:
        return False
    # The cores this process may run on (Linux), else the machine's.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) > 1
    return (os.cpu_count() or 1) > 1


def collect_less() -> None:
    """Have Python's garbage collector look for cycles less often in this process (a run,
    or its helper). A build makes millions of small objects that live until it ends (rows,
    papers, rendered parts) and each full collection walks them all: at Python's default
    (a collection every 700 objects made and not freed) a first build of 10,000 papers made
    12 full collections, 4-5 % of its processor time; at 10,000 it makes none, and the
    memory held is the same (measured: 187 MB either way)."""
    import gc

    gc.set_threshold(10_000, 10, 10)


def ends_with_this_process() -> Callable[[], None] | None:
    """Return a `preexec_fn` that has a child process killed when this process dies
    (Linux's parent-death signal), or None where there is no such thing.

    A run killed with SIGKILL cannot stop its children; without this they would go on
    writing into public/ (or a temp folder) after it, even while the next run cleans up.
    The signal is SIGKILL: the helper ignores SIGTERM (see the module's doc). The kernel
    sends it when the *thread* that started the child ends, so a child must be waited for
    on the thread that started it (subprocess.run, a Helper's `with`), as every one is."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import signal

    try:  # looked up here: the child, forked from a threaded process, only calls it
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]  # fmt: skip
    prctl.restype = ctypes.c_int
    parent = os.getpid()
    kill = int(signal.SIGKILL)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:  # it died before the signal was asked for
            os._exit(1)

    return preexec


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _start(state: Path | str, job: Job[P, R]) -> Helper[P, R] | None:
    """Start a helper; None if no process can be started (the run goes on alone)."""
    try:
        return Helper(state, job)
    except OSError:  # no interpreter to run (an embedded Python), no processes left
        return None


class HelperGone(FeedsError):
    """The helper process ended before answering (not an error of a part)."""


class Helper(Generic[P, R]):
    """A second process doing parts of one job (see share).

    Parts go to it on one pipe and its answers come back on another, read as they come by
    a thread of this process into a queue: the helper can always finish sending an answer
    and go on to read the next part, so neither process can wait for the other for good,
    however many parts are sent ahead and however large they are. (With one pipe read
    only between parts, a run that sent parts ahead while the helper answered filled both
    directions, and both waited for ever: 3,000 small topics did it.)
    concurrent.futures' ProcessPoolExecutor works the same way inside, but starts its
    worker through multiprocessing, which runs the caller's main script again in it (see
    the module's doc) and cannot ask for the parent-death signal."""

    def __init__(self, state: Path | str, job: Job[P, R]) -> None:
        import queue
        import site
        import subprocess
        import threading
        from multiprocessing import Pipe

        import feeds

        parts_in, self._parts = Pipe(duplex=False)  # (the reading end, the writing end)
        self._answers, answers_out = Pipe(duplex=False)
        self._inbox: queue.SimpleQueue[tuple[str, object] | None] = queue.SimpleQueue()
        # The same feeds as this process, wherever it was imported from (installed, it is
        # in site-packages, which the helper has anyway).
        env = dict(os.environ)
        here = str(Path(feeds.__file__).resolve().parent.parent)
        if here not in (*site.getsitepackages(), site.getusersitepackages()):
            env["PYTHONPATH"] = os.pathsep.join(filter(None, (here, env.get("PYTHONPATH"))))
        fds = [parts_in.fileno(), answers_out.fileno()]
        try:
            self._proc = subprocess.Popen(
                [*COMMAND, *map(str, fds)],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                env=env,
                preexec_fn=ends_with_this_process(),  # noqa: PLW1509 - it only calls prctl
            )
        except OSError:
            self._parts.close()
            self._answers.close()
            raise
        finally:
            parts_in.close()
            answers_out.close()
        self._reader = threading.Thread(target=self._read, name="helper answers", daemon=True)
        self._reader.start()
        self._send((state, job))

    def _read(self) -> None:
        """Put each answer in the inbox as it arrives; None once the helper is gone."""
        while True:
            try:
                answer = self._answers.recv()
            except (EOFError, OSError):
                self._inbox.put(None)
                return
            except Exception as e:  # noqa: BLE001 - an answer that does not unpickle
                answer = (
                    "error",
                    HelperGone(f"an answer of the helper process is unreadable: {e!r}"),
                )
            self._inbox.put(answer)

    def send(self, part: P) -> None:
        self._send(part)

    def _send(self, message: object) -> None:
        with suppress(OSError):  # it died: waiting for its answer says so
            self._parts.send(message)

    def ready(self) -> bool:
        """Whether an answer is waiting (or the helper is gone)."""
        return not self._inbox.empty()

    def answer(self) -> R:
        """Wait for the answer about the oldest part sent and return it. Raise the part's
        error, or HelperGone."""
        answer = self._inbox.get()
        if answer is None:
            self._inbox.put(None)  # gone for good: a later call says so too
            raise HelperGone(f"the helper process ended ({self._proc.wait()})")
        kind, value = answer
        if kind == "error":
            raise value  # type: ignore[misc]
        result: R = value  # type: ignore[assignment]
        return result

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        # The helper reads the end of its input and exits; if this process failed, it
        # finishes the part in hand (its files whole), and its answer is read and dropped.
        self._parts.close()
        self._proc.wait()
        self._reader.join()
        self._answers.close()


def share(
    parts: Sequence[P],
    here: Callable[[P], R],
    begin: Callable[[P], None],
    helper: Helper[P, R],
    weight: Callable[[P], int] = lambda _part: 1,
) -> Iterator[R]:
    """Do the parts, this process from the first on and the helper from the last back,
    until they meet: whichever is faster does more. Yield what each part gives, as it is
    done here or answered by the helper; what the helper was sent when it died is done
    here."""
    front, back = 0, len(parts)
    sent: deque[P] = deque()
    owed = 0  # the weight of the parts sent and not answered yet
    helping = True
    while front < back or sent:
        # Two parts sent at a time, so that the helper starts the next as soon as it is
        # done; and more before this process takes a part heavier than what the helper has
        # (a topic of a quarter of a million papers would leave it waiting for minutes),
        # but never the part this process takes next.
        while (
            helping
            and front < back
            and (len(sent) < 2 or (front < back - 1 and owed < weight(parts[front])))
        ):
            back -= 1
            begin(parts[back])
            helper.send(parts[back])
            sent.append(parts[back])
            owed += weight(parts[back])
        if sent and (helper.ready() or front == back):
            try:
                result = helper.answer()
            except HelperGone:
                helping = False  # what it was sent is done here
                while sent:
                    yield here(sent.popleft())
            else:
                owed -= weight(sent.popleft())
                yield result
        elif front < back:
            begin(parts[front])
            front += 1
            yield here(parts[front - 1])


# -- in the helper process ----------------------------------------------------------------


def _main(fd_in: int, fd_out: int) -> None:
    import signal
    from multiprocessing.connection import Connection

    from feeds.state import Store

    # The run decides when to stop (see the module's doc): a Ctrl-C, a `systemctl stop` or
    # a closed terminal reaches the whole group, and the run tells the helper.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    collect_less()
    parts, answers = Connection(fd_in, writable=False), Connection(fd_out, readable=False)
    try:
        state, job = parts.recv()
        store = Store.reader(state)
        while True:
            part = parts.recv()
            try:
                result = job.run(store, part)
            except Exception as e:  # noqa: BLE001 - the parent raises it as its own
                _answer(answers, ("error", e))
            else:
                _answer(answers, ("done", result))
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the parent is done, or gone


def _answer(conn: Connection, answer: tuple[str, object]) -> None:
    try:
        conn.send(answer)
    except Exception as e:  # an error that does not pickle
        if answer[0] != "error":
            raise
        conn.send(("error", RuntimeError(f"in the helper process: {answer[1]!r} ({e})")))


if __name__ == "__main__":
    _main(int(sys.argv[1]), int(sys.argv[2]))
