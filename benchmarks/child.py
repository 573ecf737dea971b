"""Run `feeds` (arguments as for the command); report the time spent writing files, the
time the run waited for it, and the peak memory.

The benchmark's full build runs through this, so that "everything but writing" and
"writing" can be told apart and each set against its own baseline. Writing is what the
file-system floor does too: creating the temp file, writing the bytes, renaming it into
place, and the final sync. feeds writes its larger files on a thread of its own while it
renders the next ones (feeds.publish.write.Writer), so writing is not all lost time: the
run waits while it writes a small file itself, when the thread falls behind, at the end,
and for the sync. These go to stderr after the
command's own output: `write-seconds <float>`, `wait-seconds <float>`, `peak-kb <int>`.
With BENCH_REPLACED=<file> in the environment, the run (and a helper) also adds to it the
paths of the files it put in place, a line each (for the floor of a new digest's writes).

A big match or publish does some of its parts in a helper process (feeds.parallel); it is
started through this script too, and reports its own `helper-write-seconds` and
`helper-peak-kb` when it ends.

The processor time of the Pagefind processes the run starts (user + system, as the kernel
counts it when each is waited for) goes out as `pagefind-cpu-seconds <float>`: the
benchmark sets the build's processor time outside Pagefind against the naive build's.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

SPENT = [0.0]  # in the system calls that write files (the writer's thread, and the sync)
WAITED = [0.0]  # the run's own thread, waiting for the writer (a full queue, the end, sync)
REPLACED: list[str] = []  # the files put in place, when BENCH_REPLACED asks for them
PAGEFIND: dict[int, float] = {}  # the Pagefind processes started: pid -> processor seconds


def _timed(fn: Callable[..., Any], into: list[float] = SPENT) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into[0] += time.perf_counter() - start

    return wrapper


def _recorded(replace: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        REPLACED.append(os.fspath(dst))
        return replace(src, dst, *args, **kwargs)

    return wrapper


def _counting_pagefind() -> None:
    """Have the Pagefind processes' processor time counted when they are waited for:
    subprocess waits with os.waitpid, which wait4 does too and gives their rusage."""
    import subprocess

    start = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def execute_child(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        start(self, args, *rest, **kw)
        if "pagefind" in os.path.basename(str(args[0] if isinstance(args, list) else args)):
            PAGEFIND[self.pid] = 0.0

    def waitpid(pid: int, options: int) -> tuple[int, int]:
        got, status, usage = os.wait4(pid, options)
        if got in PAGEFIND:
            PAGEFIND[got] += usage.ru_utime + usage.ru_stime
        return got, status

    subprocess.Popen._execute_child = execute_child  # type: ignore[attr-defined]
    os.waitpid = waitpid


def main() -> None:
    _counting_pagefind()
    untimed_sync = os.sync
    for name in ("open", "write", "fchmod", "close", "replace", "sync"):
        setattr(os, name, _timed(getattr(os, name)))
    record = os.environ.get("BENCH_REPLACED")
    if record:
        os.replace = _recorded(os.replace)
    from feeds import parallel as helper

    if sys.argv[1:2] == ["--helper"]:
        try:
            helper._main(int(sys.argv[2]))
        finally:
            if record:
                _save(record)
            print(f"helper-write-seconds {SPENT[0]:.3f}", file=sys.stderr)
            print(f"helper-peak-kb {_peak_kb()}", file=sys.stderr)
        return
    helper.COMMAND = [sys.executable, __file__, "--helper"]
    from feeds.publish.write import Writer

    Writer.write = _timed(Writer.write, WAITED)  # type: ignore[method-assign]
    Writer.close = _timed(Writer.close, WAITED)  # type: ignore[method-assign]
    # The sync is both: the writer's last work, and the run waits for it. The one begun on
    # a thread of its own while the search index is finished is neither: the disk's work
    # beside the run, not timed.
    sync, waited_sync = untimed_sync, _timed(os.sync, WAITED)

    def synced() -> None:
        (waited_sync if threading.current_thread() is threading.main_thread() else sync)()

    os.sync = synced
    from feeds.cli import main as feeds  # what the `feeds` command runs

    try:
        feeds()
    finally:
        if record:
            _save(record)
        print(f"write-seconds {SPENT[0]:.3f}", file=sys.stderr)
        print(f"wait-seconds {WAITED[0]:.3f}", file=sys.stderr)
        print(f"peak-kb {_peak_kb()}", file=sys.stderr)
        print(f"pagefind-cpu-seconds {sum(PAGEFIND.values()):.3f}", file=sys.stderr)


def _save(record: str) -> None:
    """Add the paths of the files put in place to the file `record` (a helper adds its own)."""
    with open(record, "a") as f:
        f.writelines(path + "\n" for path in REPLACED)


def _peak_kb() -> int:
    """This process's peak resident memory since exec. (getrusage's maximum would also
    count the parent's memory, copied at fork before exec: a big benchmark process.)"""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    main()
