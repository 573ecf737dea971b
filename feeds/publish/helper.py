"""A helper process for a big publish: the machine's other core renders some of its parts.

Rendering is Python, and a second thread cannot run Python beside the first (the
interpreter lock); a second process can. The helper is `python -m feeds.publish.helper`:
it opens the state to read only (in WAL mode it reads while this process holds the run's
lock), renders the parts it is sent with a writer of its own, and answers what it wrote.
A fresh interpreter rather than multiprocessing's spawn, which would run the caller's main
script again in the helper (a script that calls feeds.pipeline.run would start a second
run there).

It ignores SIGINT and SIGTERM: this process decides when a run stops (`feeds watch`
finishes its cycle on SIGTERM, and a Ctrl-C reaches every process of the terminal). It
exits when this process closes the connection or dies. If it dies itself (killed for
memory, say), this process renders what it had been sent.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Self

from feeds.publish.parts import Pages, Part, Plan, render_part

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

# Below this much work (a paper page is one, a topic's files about a hundred) a publish
# is not worth a second process: starting one and importing the renderers takes ~0.5 s.
HELP_FROM = 20_000
_TOPIC_WORK = 100
# How the helper is started; the connection's file descriptor is appended. `-P`: not the
# current folder on its import path (a `yaml.py` there must not shadow PyYAML).
COMMAND = [sys.executable, "-P", "-m", "feeds.publish.helper"]


def worth_helping(parts: Sequence[Part]) -> bool:
    work = sum(p.count if isinstance(p, Pages) else _TOPIC_WORK for p in parts)
    if work < HELP_FROM:
        return False
    # The cores this process may run on (Linux), else the machine's.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) > 1
    return (os.cpu_count() or 1) > 1


def start_helper(state: Path, plan: Plan) -> Helper | None:
    """Start a helper; None if no process can be started (the run goes on alone)."""
    try:
        return Helper(state, plan)
    except OSError:  # no interpreter to run (an embedded Python), no processes left
        return None


class HelperGone(Exception):
    """The helper process ended before answering (not an error of a part)."""


class Helper:
    """A second process rendering parts of one publish (see share)."""

    def __init__(self, state: Path, plan: Plan) -> None:
        import site
        import subprocess
        from multiprocessing import Pipe

        import feeds

        self._conn, theirs = Pipe()
        # The same feeds as this process, wherever it was imported from (installed, it is
        # in site-packages, which the helper has anyway).
        env = dict(os.environ)
        here = str(Path(feeds.__file__).resolve().parent.parent)
        if here not in (*site.getsitepackages(), site.getusersitepackages()):
            env["PYTHONPATH"] = os.pathsep.join(filter(None, (here, env.get("PYTHONPATH"))))
        self._proc = subprocess.Popen(
            [*COMMAND, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env=env,
        )
        theirs.close()
        self.written = self.unchanged = 0
        self._send((state, plan))

    def send(self, part: Part) -> None:
        self._send(part)

    def _send(self, message: object) -> None:
        with suppress(OSError):  # it died: waiting for its answer says so
            self._conn.send(message)

    def ready(self) -> bool:
        """Whether an answer is waiting (or the helper is gone)."""
        return self._conn.poll()

    def answer(self) -> int:
        """Wait for the answer about the oldest part sent; return how many files it
        removed (and count what it wrote). Raise the part's error, or HelperGone."""
        try:
            kind, value = self._conn.recv()
        except (EOFError, OSError) as e:
            raise HelperGone(f"the helper process ended ({self._proc.wait()})") from e
        if kind == "error":
            raise value
        written, unchanged, removed = value
        self.written += written
        self.unchanged += unchanged
        return int(removed)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        # The helper reads the end of its input and exits; if this process failed, it
        # finishes the part in hand (its files whole), cannot answer, and exits.
        self._conn.close()
        self._proc.wait()


def share(
    parts: Sequence[Part],
    here: Callable[[Part], int],
    begin: Callable[[Part], None],
    helper: Helper,
) -> int:
    """Render the parts, this process from the first on and the helper from the last back,
    until they meet: whichever is faster does more. `here` renders a part in this process
    and returns how many files it removed; `begin` is told of each part as it is started
    or sent. Return how many files were removed; the helper counts what it wrote."""
    front, back = 0, len(parts)
    sent: deque[Part] = deque()
    removed = 0
    helping = True
    while front < back or sent:
        # Two parts sent at a time: the helper starts the next as soon as it is done.
        while helping and len(sent) < 2 and front < back:
            back -= 1
            begin(parts[back])
            helper.send(parts[back])
            sent.append(parts[back])
        if sent and (helper.ready() or front == back):
            try:
                removed += helper.answer()
                sent.popleft()
            except HelperGone:
                helping = False  # what it was sent is rendered here
                for part in sent:
                    removed += here(part)
                sent.clear()
        elif front < back:
            begin(parts[front])
            removed += here(parts[front])
            front += 1
    return removed


# -- in the helper process ----------------------------------------------------------------


def _main(fd: int) -> None:
    import signal
    from multiprocessing.connection import Connection

    from feeds.publish.write import Writer
    from feeds.store import Store

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    conn = Connection(fd)
    try:
        state, plan = conn.recv()
        store = Store.reader(state)
        while True:
            part = conn.recv()
            try:
                with Writer() as out:
                    removed = render_part(plan, store, out, part)
            except Exception as e:  # noqa: BLE001 - the parent raises it as its own
                _answer(conn, ("error", e))
            else:
                _answer(conn, ("done", (out.written, out.unchanged, removed)))
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
    _main(int(sys.argv[1]))
