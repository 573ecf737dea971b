"""Run `feeds` (arguments as for the command) and report how long it spent writing files.

The benchmark's full build runs through this, so that "everything but writing" and
"writing" can be told apart and each set against its own baseline. Writing is what the
file-system floor does too: creating the temp file, writing the bytes, renaming it into
place, comparing with an existing file, and the final sync. The time goes to stderr as
`write-seconds <float>` after the command's own output.
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


if __name__ == "__main__":
    main()
