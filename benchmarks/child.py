"""Run `feeds` (arguments as for the command); report the time spent writing files, and
the peak memory.

The benchmark's full build runs through this, so that "everything but writing" and
"writing" can be told apart and each set against its own baseline. Writing is what the
file-system floor does too: creating the temp file, writing the bytes, renaming it into
place, comparing with an existing file, and the final sync. Both go to stderr after the
command's own output: `write-seconds <float>`, `peak-kb <int>`.
"""

from __future__ import annotations

import filecmp
import os
import sys
import time
from collections.abc import Callable
from typing import Any, Self

SPENT = [0.0]


def _timed(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[0] += time.perf_counter() - start

    return wrapper


class _TimedFile:
    """A file whose writes and close count as writing (rendering happens between them)."""

    def __init__(self, f: Any) -> None:
        self.f = f

    def write(self, data: bytes) -> int:
        return int(_timed(self.f.write)(data))

    def writelines(self, pieces: Any) -> None:
        for piece in pieces:
            self.write(piece)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        _timed(self.f.close)()


def main() -> None:
    for module, name in ((os, "open"), (os, "write"), (os, "fchmod"), (os, "close"),
                         (os, "replace"), (os, "sync"), (filecmp, "cmp")):  # fmt: skip
        setattr(module, name, _timed(getattr(module, name)))
    # A streamed page is written through a file object on the descriptor: its writes count
    # (the rendering between them does not).
    from feeds.publish import write

    real_open = open
    write.open = lambda *a, **k: _TimedFile(real_open(*a, **k))  # type: ignore[attr-defined]
    from feeds.cli import cli

    try:
        cli(sys.argv[1:])
    finally:
        print(f"write-seconds {SPENT[0]:.3f}", file=sys.stderr)
        print(f"peak-kb {_peak_kb()}", file=sys.stderr)


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
